"""Notebook utilities every chapter uses: runtime report, expected errors, graph drawing,
bytes saved for backward.

Injected into student notebooks by the build (standard library and torch only;
graphviz is optional, as on some machines the Python package or the ``dot``
binary is missing).
"""

import contextlib
import platform
import shutil
import sys
import textwrap

import torch

__all__ = [
    "info_entorno", "muestra_error", "recorrer_grafo", "dibujar_grafo", "medir_guardado",
]


def info_entorno(consejo_gpu=False):
    """Muestra dónde se ejecuta el cuaderno: Colab o no, CPU o GPU, versiones de Python y torch.

    ``consejo_gpu``: el capítulo trata de GPU (la construcción lo toma del ``INFO_ENTORNO``
    del capítulo); entonces dice también qué entorno de ejecución elegir y qué cambia este.
    """
    en_colab = "google.colab" in sys.modules
    if torch.cuda.is_available():
        dispositivo = f"GPU ({torch.cuda.get_device_name(0)})"
    else:
        dispositivo = "CPU"
    print(f"Entorno: {'Google Colab' if en_colab else 'local'} · dispositivo: {dispositivo} · "
          f"Python {platform.python_version()} · torch {torch.__version__}")
    if consejo_gpu:
        print(textwrap.fill(consejo_entorno_gpu(), width=90))


def consejo_entorno_gpu():
    """Spanish advice for a GPU chapter: the runtime to pick, or what this GPU can do."""
    if not torch.cuda.is_available():
        return ("Este capítulo se aprovecha con GPU: en Colab, Entorno de ejecución → Cambiar "
                "tipo de entorno de ejecución → GPU T4. Sin GPU funciona igual en CPU con "
                "bfloat16; las celdas de GPU se saltan y las medidas son de tu CPU.")
    nombre = torch.cuda.get_device_name(0)
    mayor, menor = torch.cuda.get_device_capability(0)
    gpu = f"Este capítulo usa tu GPU, {nombre} (capacidad {mayor}.{menor}):"
    if mayor >= 8:  # Ampere or newer: bf16 in hardware, as the chapter's bf16_nativo() says
        return (f"{gpu} tiene bfloat16 nativo, así que verás acelerar bfloat16 y también "
                "float16 (este con GradScaler).")
    if mayor >= 7:  # Volta/Turing (the T4): fp16 tensor cores, bf16 only emulated
        return (f"{gpu} no tiene bfloat16 nativo; la aceleración la verás con float16 y "
                "GradScaler (bfloat16 se emula y va lento).")
    return (f"{gpu} no tiene núcleos tensoriales ni bfloat16 nativo: la precisión mixta "
            "ahorra memoria pero apenas acelera; en Colab, elige GPU T4.")


@contextlib.contextmanager
def muestra_error(*tipos):
    """Ejecuta un bloque que debe fallar con uno de ``tipos``: muestra el error y el cuaderno sigue.

    Si el bloque *no* falla, lanza ``AssertionError``: el texto describe un error que
    PyTorch ya no produce, y la prueba del cuaderno debe notarlo.
    """
    try:
        yield
    except tipos as error:
        primera_linea = str(error).strip().splitlines()[0] if str(error).strip() else ""
        print(f"⚠ {type(error).__name__} (esperado): {primera_linea}")
    else:
        nombres = ", ".join(t.__name__ for t in tipos)
        raise AssertionError(f"Se esperaba {nombres} y el bloque terminó sin error.")


def _nombre_nodo(nodo):
    """Readable label of a graph node: the Function's class, or the leaf it accumulates into."""
    variable = getattr(nodo, "variable", None)
    if variable is not None:
        return f"AccumulateGrad → hoja {tuple(variable.shape)}"
    return type(nodo).__name__


def recorrer_grafo(tensor):
    """(profundidad, etiqueta) de cada nodo alcanzable desde ``tensor.grad_fn``, en profundidad.

    Un nodo que comparten dos caminos aparece una vez y marcado: el grafo es acíclico, no un árbol.
    """
    filas, vistos = [], set()

    def visitar(nodo, profundidad):
        if nodo is None:
            return
        if nodo in vistos:
            filas.append((profundidad, _nombre_nodo(nodo) + " (ya visto)"))
            return
        vistos.add(nodo)
        filas.append((profundidad, _nombre_nodo(nodo)))
        for siguiente, _ in nodo.next_functions:
            visitar(siguiente, profundidad + 1)

    visitar(tensor.grad_fn, 0)
    return filas


def dibujar_grafo(tensor):
    """Dibuja el grafo del pase hacia atrás con graphviz si está instalado; si no, lo escribe
    como texto."""
    try:
        import graphviz
    except ImportError:
        graphviz = None
    if graphviz is None or shutil.which("dot") is None:
        for profundidad, etiqueta in recorrer_grafo(tensor):
            print("    " * profundidad + "└─ " + etiqueta)
        return None
    grafo = graphviz.Digraph(graph_attr={"rankdir": "BT"}, node_attr={"shape": "box"})
    pendientes, vistos = [tensor.grad_fn], set()
    while pendientes:
        nodo = pendientes.pop()
        if nodo is None or nodo in vistos:
            continue
        vistos.add(nodo)
        grafo.node(str(id(nodo)), _nombre_nodo(nodo))
        for siguiente, _ in nodo.next_functions:
            if siguiente is not None:
                grafo.edge(str(id(siguiente)), str(id(nodo)))
                pendientes.append(siguiente)
    return grafo


def medir_guardado(calcular, excluir=()):
    """Bytes que autograd guarda para backward mientras corre ``calcular()``, y su resultado.

    Se cuentan con ``saved_tensors_hooks``, cada almacenamiento una sola vez (una vista de un
    tensor ya guardado no suma nada); los tensores de ``excluir`` (pesos, la entrada: ya
    existían antes) no se cuentan.
    """
    vistos = {}
    excluidos = {t.untyped_storage().data_ptr() for t in excluir}

    def empaquetar(tensor):
        puntero = tensor.untyped_storage().data_ptr()
        if puntero not in excluidos:
            vistos[puntero] = tensor.untyped_storage().nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(empaquetar, lambda tensor: tensor):
        salida = calcular()
    return sum(vistos.values()), salida
