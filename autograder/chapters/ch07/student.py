"""Chapter 7: custom autograd Functions, how each exercise is built, observed and scored.

Injected into the chapter 7 student notebook by the build; the hidden tests use the
same exercises on other inputs against the reference. What a student's function does
is observed in the student's kernel as plain data:

- its output, called in the caller's grad mode (``no_grad`` or not), and the state of
  everything it was given before and after (``estado``: values, ``requires_grad`` and
  ``.grad`` of the inputs, the grad mode);
- the gradients the engine gets from its ``backward``, what that ``backward`` returned
  for each input (a hook on its node, so a Function with several outputs is read as the
  engine calls it), and whether autograd was used inside it (a ``TorchFunctionMode``
  active only while it runs);
- what its ``ctx`` saved and which tensors it keeps as attributes;
- where ``backward`` reads its tensors from: two more calls, A (the same inputs) and B
  (others), with every saved tensor recorded by ``saved_tensors_hooks``. A's gradients
  after B's forward must be A's (nothing shared between calls), and A's gradients
  computed with B's saved tensors in place of its own must be B's (``backward`` uses
  what was saved, not ``ctx`` attributes, globals or the enclosing function's variables);
- ``gradcheck`` in float64 on a few points.

The public oracles are plain autograd on PyTorch's own operations (or a search over the
grid), never the reference.
"""

import contextlib
import io

import torch
from torch.overrides import TorchFunctionMode

from autograder.student.compare import (
    ComprobacionFallida,
    Ejercicio,
    Parte,
    cambios,
    caso_en_proceso,
    comparar,
    comprobar_casos,
    datos_a_error,
    ejercicios,
    error_a_datos,
    estado,
    exigir,
    fallar,
    llamar,
    observar_llamada,
    sanear,
    verificar_sin_efectos,
)
from autograder.student.diagnosis import (
    Diagnostico,
    cerca,
    diagnosticar_lista,
    diagnosticar_tensor,
)
from autograder.student.messages import registrar

__all__ = ["comprobar_stable_softplus", "comprobar_quantize_ste", "comprobar_linear_tanh",
           "comprobar_checkpoint_apply"]

# id -> (title, Spanish text, Spanish hint, English text)
MENSAJES = {
    "softplus_desborda": (
        "Softplus que desborda",
        "`{nombre}` tiene infinitos o NaN para entradas grandes: `exp(beta·x)` desborda antes "
        "del logaritmo.",
        "¿Para qué valores de la entrada desborda tu exponencial? Busca una forma equivalente "
        "de la fórmula que no exponencie nada positivo.",
        "`{nombre}` overflows for large inputs: exp(beta·x) overflows before the log."),
    "softplus_sin_dividir_por_beta": (
        "Falta dividir por beta",
        "`{nombre}` es beta veces la correcta: calculaste log(1 + e^(beta·x)) sin el 1/beta "
        "de delante.",
        "Compara tu fórmula con la del enunciado término a término: ¿qué factor falta fuera "
        "del logaritmo?",
        "`{nombre}` is beta times too large: the 1/beta in front is missing."),
    "sin_grad_output": (
        "backward sin grad_output",
        "`{nombre}` es la derivada local de tu función, sin multiplicar por el gradiente que "
        "llega de arriba.",
        "¿Qué recibe `backward` como `grad_output`, y qué debe hacer con él según la regla de "
        "la cadena?",
        "`{nombre}` is the local derivative, not multiplied by grad_output."),
    "sigmoide_sin_beta": (
        "Sigmoide sin beta",
        "`{nombre}` es grad_output · σ(x): a la sigmoide le falta beta (la derivada es "
        "σ(beta·x)).",
        "Deriva log(1 + e^(beta·x)) / beta con la regla de la cadena: ¿qué queda dentro de "
        "la sigmoide?",
        "`{nombre}` is grad_output·sigmoid(x): the derivative is sigmoid(beta·x)."),
    "gradiente_por_beta": (
        "Beta de más en la derivada",
        "`{nombre}` es beta veces el correcto: multiplicaste por beta (la derivada de beta·x) "
        "y olvidaste que el 1/beta de delante lo cancela.",
        "Escribe la derivada completa, con el 1/beta de fuera y el beta de dentro, antes de "
        "simplificar.",
        "`{nombre}` is beta times too large: the 1/beta in front cancels d(beta·x)/dx."),
    "gradiente_entre_beta": (
        "Beta de menos en la derivada",
        "`{nombre}` es 1/beta del correcto: dividiste por beta, pero el beta de dentro "
        "(la derivada de beta·x) lo cancela.",
        "Escribe la derivada completa, con el 1/beta de fuera y el beta de dentro, antes de "
        "simplificar.",
        "`{nombre}` is 1/beta of the expected value: the inner beta cancels the 1/beta."),
    "sigmoide_invertida": (
        "Sigmoide con el signo cambiado",
        "`{nombre}` es grad_output · σ(−beta·x) = grad_output · (1 − σ(beta·x)): el signo "
        "del argumento está cambiado.",
        "σ(z) = 1 / (1 + e^(−z)) crece con z: comprueba en x grande y positivo que la "
        "derivada tiende a 1, no a 0.",
        "`{nombre}` is grad_output·sigmoid(−beta·x): the sign inside the sigmoid is flipped."),
    "sigmoide_desborda": (
        "Sigmoide que desborda",
        "`{nombre}` tiene NaN o infinitos donde |beta·x| es grande: tu sigmoide desborda "
        "(e^z / (1 + e^z) da inf/inf).",
        "¿Para qué valores desborda tu exponencial? Escribe la sigmoide sin exponenciar nada "
        "positivo, o busca una función de torch que ya sea estable.",
        "`{nombre}` has NaN or inf where |beta·x| is large: the sigmoid overflows."),
    "gradcheck_falla": (
        "gradcheck no pasa",
        "`torch.autograd.gradcheck` (en float64) no pasa: tu `backward` no es la derivada de tu "
        "`forward`.",
        "Deriva la fórmula otra vez, término a término, y compárala con diferencias finitas en "
        "unos pocos puntos.",
        "gradcheck (float64) fails: backward is not the derivative of forward."),
    "gradientes_por_entrada": (
        "Un gradiente por entrada",
        "`backward` devolvió un número de gradientes distinto del número de entradas de "
        "`forward`. PyTorch dice: {mensaje}",
        "¿Cuántos valores devuelve tu `backward`? Compáralo con los argumentos de `forward` "
        "(sin contar `ctx`).",
        "backward returned a different number of gradients than forward has inputs."),
    "gradiente_de_no_tensor": (
        "Gradiente para algo que no es un tensor",
        "`backward` devolvió un gradiente en la posición de un argumento que no es un tensor "
        "(un float o un int). PyTorch dice: {mensaje}",
        "¿Qué devuelve tu `backward` en la posición de un argumento que no es un tensor (un "
        "float, un int)?",
        "backward returned a gradient for an input that is not a tensor."),
    "forma_gradiente_function": (
        "Gradiente con otra forma",
        "`backward` devolvió un gradiente con una forma distinta de la de su entrada. PyTorch "
        "dice: {mensaje}",
        "Cada gradiente tiene la forma de su entrada: ¿falta o sobra una traspuesta?",
        "backward returned a gradient whose shape differs from its input's."),
    "backward_formas_incompatibles": (
        "Producto de matrices que no encaja",
        "Tu `backward` multiplica matrices de formas incompatibles. PyTorch dice: {mensaje}",
        "Con N, D y H distintos, una traspuesta de más o de menos no encaja: escribe la forma "
        "de cada factor (grad_output es (N, H), weight (H, D), x (N, D)) y la del gradiente "
        "que quieres obtener.",
        "backward multiplies matrices whose shapes do not match (a transpose too many or "
        "missing)."),
    "grad_output_modificado": (
        "grad_output modificado en el sitio",
        "Tu `backward` modificó `grad_output` en el sitio. Ese tensor no es tuyo: puede ser "
        "el mismo que reciben otras ramas del grafo, y les cambiarías el gradiente.",
        "¿Escribes sobre `grad_output`? Es de autograd, y puede compartirse con otros nodos del "
        "grafo.",
        "backward modified grad_output in place."),
    "sin_function_propia": (
        "Sin Function propia",
        "El resultado no sale de una `torch.autograd.Function` tuya: su `grad_fn` es "
        "`{nodo}`. Autograd derivó las operaciones por ti y tu `backward` no se usa.",
        "El ejercicio pide una función autograd propia: ¿dónde está tu subclase de "
        "`torch.autograd.Function`, y la usas?",
        "The result does not come from a custom autograd Function (grad_fn {nodo})."),
    "salida_sin_grafo": (
        "Salida sin grafo",
        "La salida no tiene `grad_fn` aunque una entrada requiere gradiente: ningún gradiente "
        "puede volver a las entradas.",
        "La salida no tiene `grad_fn`. ¿Se cortó el grafo (un `detach()`, un bloque sin "
        "autograd) o no devuelves lo que da `.apply`?",
        "The output has no grad_fn: no gradient can flow back to the inputs."),
    "derivada_cero_en_el_origen": (
        "Gradiente 0 en el origen",
        "`{nombre}` es correcto salvo en x = 0, donde vale 0: ahí la derivada no es 0.",
        "¿Qué vale tu derivada exactamente en x = 0? Mira si alguna condición estricta o "
        "un signo deja ese punto fuera de todas las ramas.",
        "`{nombre}` is right except at x = 0, where it is 0."),
    "grafo_bajo_no_grad": (
        "Grafo bajo no_grad",
        "Quien llama lo hizo dentro de `torch.no_grad()`, y tu salida tiene grafo "
        "(`grad_fn`): construiste el grafo que no te pidieron.",
        "¿Qué cambia el modo de autograd alrededor de tu `apply`? Ese modo es de quien "
        "llama.",
        "The caller is under no_grad, yet the output has a grad_fn."),
    "calcula_sin_necesidad": (
        "Calcula un gradiente que nadie pide",
        "`{nombre}` no requiere gradiente, y tu `backward` lo calcula igualmente (aunque luego "
        "devuelva `None`).",
        "¿Para qué sirve `ctx.needs_input_grad`? Mira qué entradas lo piden antes de hacer "
        "cada producto.",
        "`{nombre}` needs no gradient, yet backward computes it (and then drops it)."),
    "guarda_el_sesgo": (
        "Guarda el sesgo",
        "Tu `ctx` guarda el sesgo ({guardados}): ninguna de las fórmulas del pase hacia atrás "
        "lo usa (ni hace falta recalcular la salida con él).",
        "Mira qué tensores aparecen en las cuatro fórmulas del gradiente.",
        "ctx saves the bias ({guardados}), which no gradient formula uses."),
    "escribe_salida": (
        "La función escribe en la salida",
        "Tu función escribe mientras se ejecuta (`print` o `sys.stderr`; empieza por "
        "«{texto}»): en un entrenamiento se llama miles de veces.",
        "¿Queda algún `print` de depuración en tu `forward` o en tu `backward`?",
        "The function writes output while it runs (print or stderr): «{texto}»."),
    "salida_de_inferencia": (
        "Salida de inference_mode",
        "Tu salida es un tensor de `torch.inference_mode()`: tiene nodo, pero ninguna "
        "operación posterior puede usarla con autograd (no se guarda para el pase hacia "
        "atrás).",
        "¿Hace falta `torch.inference_mode()` dentro de `forward`? Autograd ya está "
        "desactivado ahí.",
        "The output is an inference tensor: later operations cannot use it with autograd."),
    "tensores_en_ctx": (
        "Tensores guardados como atributos de ctx",
        "Guardaste tensores como atributos de `ctx` ({atributos}) en lugar de usar "
        "`ctx.save_for_backward`.",
        "¿Cómo guardas los tensores en `ctx`? Como atributos, PyTorch no detecta si alguien los "
        "modifica ni los libera tras el pase hacia atrás; mira `save_for_backward`.",
        "Tensors were stored as ctx attributes ({atributos}) instead of save_for_backward."),
    "function_estado_compartido": (
        "Lo guardado se comparte entre llamadas",
        "Tras una segunda llamada a tu función, el `backward` de la primera dio otros "
        "gradientes: usa lo que dejó la última llamada (una variable global, un atributo de "
        "la clase), no lo suyo.",
        "¿Dónde guardas lo que necesita `backward`? Cada llamada tiene su propio `ctx`; en una "
        "red, la misma capa se llama muchas veces antes del pase hacia atrás.",
        "After a second call, the first call's backward changed: state shared between calls."),
    "function_lee_fuera_de_ctx": (
        "backward no lee lo que guardó",
        "Tu `backward` no usa lo que guardaste con `ctx.save_for_backward`: toma sus tensores "
        "de otro sitio (una variable de la función que rodea a la clase, por ejemplo).",
        "¿De dónde saca `backward` sus tensores? Solo puede fiarse de lo que guardó en `ctx`.",
        "backward does not read its tensors from ctx.saved_tensors."),
    "function_autograd_en_backward": (
        "Autograd dentro de backward",
        "Tu `backward` usa autograd ({usos}): el gradiente no es analítico, lo deriva "
        "PyTorch por ti.",
        "¿Usas autograd dentro de `backward`? La derivada se escribe a mano con operaciones de "
        "tensores sobre lo guardado.",
        "backward uses autograd ({usos}) instead of an analytic gradient."),
    "guarda_de_mas": (
        "Guarda más de lo necesario",
        "Tu `forward` guarda {elementos} números para el backward ({guardados}); basta con "
        "{maximo}.",
        "¿Qué usa de verdad tu `backward`? Guarda solo eso; con la salida de la tanh ya tienes "
        "su derivada.",
        "forward saves {elementos} numbers for backward ({guardados}); {maximo} are enough."),
    "ignora_needs_input_grad": (
        "Ignora needs_input_grad",
        "Con `{nombre}` sin `requires_grad`, tu `backward` calculó igualmente su gradiente.",
        "¿Calculas gradientes que nadie pidió (los datos de entrada, una capa congelada)? Mira "
        "`ctx.needs_input_grad`.",
        "backward computed the gradient of {nombre} although it does not require grad."),
    "derivada_tanh": (
        "Derivada de tanh equivocada",
        "Tus gradientes son los de ∂L/∂z = grad_output · ({formula}), pero la derivada de "
        "tanh es otra.",
        "¿Cuál es la derivada de tanh expresada con su propia salida? ¿Aplicas tanh dos veces?",
        "The gradients use grad_output·({formula}) as dL/dz: not the derivative of tanh."),
    "grad_bias_media": (
        "Gradiente del sesgo promediado",
        "`{nombre}` es el correcto dividido por N, el tamaño del lote: promediaste sobre las "
        "filas.",
        "El sesgo se suma a cada fila del lote: ¿sumas o promedias ∂L/∂z sobre el lote?",
        "`{nombre}` is the batch mean of dL/dz: the bias gradient is the sum over the batch."),
    "redondeo_sin_ste": (
        "Gradiente del redondeo: cero",
        "`{nombre}` es todo ceros: derivaste a través de `torch.round`, cuya derivada es 0 en "
        "casi todas partes.",
        "El redondeo tiene derivada 0 en casi todas partes. ¿Qué hace el estimador de paso "
        "directo (*straight-through estimator*) en el pase hacia atrás?",
        "`{nombre}` is all zeros: autograd differentiated through round (zero derivative)."),
    "ste_sin_recorte": (
        "Paso directo sin recorte",
        "`{nombre}` deja pasar el gradiente también donde la entrada cae fuera del rango "
        "[−levels·step, levels·step].",
        "Fuera del rango la salida está recortada (constante): ahí el gradiente es 0. ¿Qué "
        "condición sobre x (no sobre la x ya recortada) marca los elementos de dentro?",
        "`{nombre}` also passes the gradient where the input is outside the clipping range."),
    "ste_recorte_un_lado": (
        "Recorte solo por un lado",
        "`{nombre}` deja pasar el gradiente por debajo de {lado}: tu máscara solo mira un "
        "extremo del rango.",
        "El rango tiene dos extremos, −levels·step y levels·step: la máscara debe excluir lo "
        "que queda fuera de cualquiera de los dos.",
        "`{nombre}` passes the gradient beyond one end of the range: a one-sided mask."),
    "ste_mascara_redondeada": (
        "Máscara sobre el valor redondeado",
        "`{nombre}` deja pasar el gradiente hasta medio paso más allá de ±levels·step: tu "
        "máscara mira x/step ya redondeado (es lo que hace "
        "`torch.fake_quantize_per_tensor_affine`), no x.",
        "¿Sobre qué x evalúas la condición de la máscara: la original o la ya redondeada?",
        "`{nombre}` passes the gradient up to half a step beyond the range (mask on the "
        "rounded value)."),
    "ste_borde_excluido": (
        "Borde del rango excluido",
        "`{nombre}` es 0 donde |x| = levels·step exactamente: el borde del rango también pasa "
        "el gradiente.",
        "¿Qué gradiente recibe un x justo en el borde del rango? Debe pasar entero (fíjate en "
        "si tu comparación incluye la igualdad, o en qué hace en los bordes la función que "
        "usas).",
        "`{nombre}` is 0 where |x| equals levels·step: the mask must be <=, not <."),
    "ste_borde_a_medias": (
        "Borde del rango a medias",
        "`{nombre}` es grad_output/2 donde |x| = levels·step exactamente: en un empate, "
        "`torch.minimum`/`torch.maximum` reparten el gradiente entre sus dos argumentos.",
        "En el borde pasa el gradiente entero. ¿Qué hace en los bordes la función con la que "
        "recortas?",
        "`{nombre}` is grad_output/2 on the boundary: minimum/maximum split ties."),
    "rango_sin_step": (
        "Rango sin multiplicar por step",
        "`{nombre}` usa el rango [−levels, levels] en lugar de [−levels·step, levels·step].",
        "`levels` cuenta niveles a cada lado del cero; el valor del último nivel es "
        "levels·step.",
        "`{nombre}` uses [-levels, levels] as the range instead of [-levels·step, levels·step]."),
    "cuantiza_sin_escalar": (
        "Niveles sin escalar",
        "`{nombre}` devuelve el número de nivel (un entero) en lugar del valor cuantizado: es "
        "1/step veces el correcto.",
        "Tras redondear en unidades de `step`, ¿vuelves a las unidades de x?",
        "`{nombre}` returns the level index, not the quantized value (1/step times)."),
    "cuantiza_sin_recorte": (
        "Cuantización sin recorte",
        "`{nombre}` no recorta: hay valores fuera de [−levels·step, levels·step].",
        "¿Dónde recortas al rango? Sin recorte, los valores grandes salen del rango cuantizado.",
        "`{nombre}` is not clipped to [-levels·step, levels·step]."),
    "redondeo_equivocado": (
        "Redondeo equivocado",
        "`{nombre}` lleva x/step al entero de {como}, no al más cercano.",
        "Cada x va al múltiplo de `step` más cercano: ¿qué función de redondeo usas?",
        "`{nombre}` rounds x/step {como}, not to the nearest integer."),
    "checkpoint_guarda_activaciones": (
        "El forward guarda activaciones",
        "Tu `forward` dejó guardados {n} tensores intermedios ({kib:.1f} KiB) para el pase "
        "hacia atrás, además de las entradas: `fn` se ejecutó con el grafo activo y el "
        "recálculo no ahorra memoria.",
        "¿En qué modo de autograd ejecutas `fn` dentro de `forward`? Lo único que debe quedar "
        "guardado hasta el pase hacia atrás son las entradas.",
        "forward saved {n} intermediate tensors ({kib:.1f} KiB): fn ran with the graph on."),
    "checkpoint_recalculo_sin_grafo": (
        "Recálculo sin grafo",
        "Lo que recalculas en `backward` no tiene grafo: dentro de `backward` autograd está "
        "desactivado, así que no hay nada que derivar. PyTorch dice: {mensaje}",
        "¿Qué modo de autograd está activo mientras corre tu `backward`? El recálculo tiene "
        "que construir su propio grafo.",
        "The recomputation in backward has no graph (autograd is off inside backward)."),
    "checkpoint_sin_detach": (
        "Recálculo conectado al grafo de fuera",
        "Durante el pase hacia atrás cambió el `.grad` de {que}: recalculaste `fn` sobre los "
        "tensores guardados tal cual, conectados al grafo de fuera, y el gradiente llegó a "
        "las entradas por dos caminos (tu `backward` y el motor de autograd).",
        "¿Sobre qué tensores recalculas `fn`: los guardados, que siguen enganchados al grafo "
        "de fuera, o copias separadas de él?",
        "The recomputation was connected to the outer graph: .grad of {que} changed."),
    "checkpoint_recalcula_sin_copias": (
        "Recálculo sobre los tensores de fuera",
        "Tu `backward` recalculó `fn` sobre {que} tal cual, los tensores de quien llama, "
        "enganchados a su grafo, y no sobre copias separadas de él.",
        "¿Sobre qué tensores recalculas `fn`: los guardados, que siguen enganchados al grafo "
        "de fuera, o copias separadas de él?",
        "backward recomputed fn on the caller's own tensors ({que}), not detached copies."),
    "checkpoint_orden_gradientes": (
        "Gradientes en otro orden",
        "`backward` devolvió un gradiente cuya forma no es la de la entrada en esa posición. "
        "PyTorch dice: {mensaje}",
        "`backward` devuelve un valor por argumento de `forward` y en su mismo orden: ¿qué va "
        "en la posición de `fn`, cuál en la de `x` y cuáles después?",
        "backward returned gradients in another order than forward's arguments."),
    "checkpoint_sin_parametros": (
        "Sin gradientes de los parámetros",
        "El gradiente de `x` es correcto, pero {nombre} es None: tu `backward` solo deriva "
        "respecto de `x`.",
        "¿Respecto de qué tensores derivas el recálculo? Los parámetros también son entradas "
        "de `forward`.",
        "The gradient of x is right but {nombre} is None: backward ignores the parameters."),
    "checkpoint_llamadas_fn": (
        "fn no se ejecuta exactamente una vez",
        "En {donde}, `fn` se ejecutó {veces} veces; debe ejecutarse exactamente una.",
        "¿Cuántas veces llamas a `fn` en `forward`, y cuántas en `backward`? El recálculo "
        "cambia memoria por un pase hacia adelante más, ni cero ni varios.",
        "fn ran {veces} times in {donde}; exactly once is expected."),
}
registrar(MENSAJES)

DTYPES = ("float32", "float64")  # what every exercise of this chapter accepts

# What an error from the autograd engine says about a custom backward.
ERRORES_DE_BACKWARD = {
    "incorrect number of gradients": "gradientes_por_entrada",
    "invalid gradient at index": "forma_gradiente_function",
    "corresponding forward input was not a Variable": "gradiente_de_no_tensor",
    "cannot be multiplied": "backward_formas_incompatibles",
    "does not require grad and does not have a grad_fn": "checkpoint_recalculo_sin_grafo",
}


def _error_de_backward(fallo):
    """Plain data for an error raised while the engine ran the student's backward."""
    detalle = str(fallo.hechos.get("detalle", ""))
    ultima = detalle.strip().splitlines()[-1] if detalle.strip() else ""
    for fragmento, diagnostico in ERRORES_DE_BACKWARD.items():
        if fragmento in detalle:
            return error_a_datos(ComprobacionFallida(Diagnostico(diagnostico,
                                                                 {"mensaje": ultima})))
    return error_a_datos(fallo)


def es_function_propia(tensor):
    """True when ``tensor`` comes out of a ``torch.autograd.Function``'s ``apply``."""
    return (type(tensor) is torch.Tensor
            and isinstance(tensor.grad_fn, torch.autograd.function.BackwardCFunction))


class _Escrito:
    """What the student's code writes (``print``, ``sys.stderr``) while it runs, kept apart
    from the cell's output: a graded function writes nothing."""

    def __init__(self):
        self.texto = io.StringIO()
        self._pila = []

    def entrar(self):
        desvios = [contextlib.redirect_stdout(self.texto), contextlib.redirect_stderr(self.texto)]
        for desvio in desvios:
            desvio.__enter__()
        self._pila.append(desvios)

    def salir(self):
        if self._pila:
            for desvio in reversed(self._pila.pop()):
                desvio.__exit__(None, None, None)

    def leido(self):
        return self.texto.getvalue()[:200]


def _llamada(funcion, *args, escrito=None):
    """observar_llamada that also returns the raw result (to differentiate it afterwards);
    what the call writes goes to ``escrito``."""
    guardado = []
    escrito = escrito or _Escrito()

    def guardar(*argumentos):
        escrito.entrar()
        try:
            guardado.append(funcion(*argumentos))
        finally:
            escrito.salir()
        return guardado[-1]

    observacion = observar_llamada(guardar, *args)
    salida = guardado[0] if guardado else None
    observacion["salida_de_inferencia"] = (type(salida) is torch.Tensor
                                           and salida.is_inference())
    return observacion, salida


def _hoja(tensor, requiere):
    """A fresh leaf with ``tensor``'s values."""
    return tensor.detach().clone().requires_grad_(requiere)


def _gradientes(salida, entradas, arriba, retener=False):
    """Gradients of ``salida`` (upstream ``arriba``, handed to the engine as is) for each of
    ``entradas``, None for those that do not require grad (or that the graph does not
    reach), as plain data."""
    hojas = [t for t in entradas if t.requires_grad]
    if not hojas:
        return [None] * len(entradas)
    gradientes = iter(llamar(torch.autograd.grad, salida, hojas, grad_outputs=arriba,
                             retain_graph=retener, allow_unused=True))
    return sanear([next(gradientes) if t.requires_grad else None for t in entradas])


# ---------------------------------------------------------------- what backward does
class _Vigia(TorchFunctionMode):
    """Active only while the student's ``backward`` runs: notes every use of autograd."""

    GUARDADOS = 64  # the computed tensors kept, at most (tiny: the cases' inputs are)

    def __init__(self, formas=()):
        super().__init__()
        self.usos = []
        self.formas = set(formas)  # the inputs' shapes: a tensor of one may be its gradient
        self.calculados = []  # what backward computed in those shapes, by value

    def __torch_function__(self, func, types, args=(), kwargs=None):
        resultado = func(*args, **(kwargs or {}))
        nombre = getattr(func, "__name__", str(func))
        for t in (resultado if isinstance(resultado, (tuple, list)) else (resultado,)):
            if (isinstance(t, torch.Tensor) and tuple(t.shape) in self.formas
                    and len(self.calculados) < self.GUARDADOS):
                with torch._C.DisableTorchFunction():
                    self.calculados.append(t.detach().clone())
        if nombre in ("grad", "backward"):
            self.usos.append(f"`{nombre}`")
        elif any(isinstance(t, torch.Tensor) and t.grad_fn is not None
                 for t in (resultado if isinstance(resultado, (tuple, list)) else (resultado,))):
            self.usos.append(f"`{nombre}` con el grafo activo")
        return resultado


def _espiar_backward(nodo, escrito, formas=()):
    """Hooks on the student's node: what its backward returned, autograd used in it, and
    what it wrote (into ``escrito``).

    The mode is pushed when the node starts and popped when it ends; if backward raises,
    the engine restores the thread's state itself (and ``cerrar`` the output)."""
    vigia, visto = _Vigia(formas), {"activo": False, "devuelto": None}

    def antes(grad_outputs):
        vigia.__enter__()
        escrito.entrar()
        visto["activo"] = True

    def despues(grad_inputs, grad_outputs):
        if visto["activo"]:
            visto["activo"] = False
            escrito.salir()
            vigia.__exit__(None, None, None)
        visto["devuelto"] = sanear(list(grad_inputs))

    ganchos = [nodo.register_prehook(antes), nodo.register_hook(despues)]

    def cerrar():
        if visto["activo"]:
            visto["activo"] = False
            escrito.salir()
        for gancho in ganchos:
            gancho.remove()
        return {"devuelto": visto["devuelto"], "autograd_en_backward": sorted(set(vigia.usos)),
                "tensores_en_backward": vigia.calculados}

    return cerrar


def observar_gradientes(salida, entradas, peso, escrito=None):
    """The gradients the engine gets for ``entradas`` from ``salida`` with upstream ``peso``.

    Facts, as plain data: whether ``salida`` has a graph, the gradients (None for an input
    that does not require grad or is not reached), the error the engine raised, whether
    backward wrote into ``grad_output`` in place, the node type (a custom Function or
    not), and, for a Function, what its backward returned and whether it used autograd.
    """
    propia = es_function_propia(salida)
    datos = {"con_grafo": False, "gradientes": None, "error_backward": None,
             "grad_output_modificado": False, "funcion_propia": propia,
             "nodo": type(getattr(salida, "grad_fn", None)).__name__,
             "devuelto": None, "autograd_en_backward": [], "tensores_en_backward": []}
    if type(salida) is not torch.Tensor or salida.grad_fn is None:
        return datos
    datos["con_grafo"] = True
    if salida.shape != peso.shape:
        return datos
    arriba = peso.clone()
    formas = {tuple(t.shape) for t in entradas if isinstance(t, torch.Tensor)}
    cerrar = (_espiar_backward(salida.grad_fn, escrito or _Escrito(), formas) if propia
              else None)
    try:
        datos["gradientes"] = _gradientes(salida, entradas, arriba)
    except ComprobacionFallida as fallo:
        datos["error_backward"] = _error_de_backward(fallo)
    finally:
        if cerrar is not None:
            datos.update(cerrar())
    datos["grad_output_modificado"] = not torch.equal(arriba, peso)
    return datos


def _tensores_dentro(valor, profundidad=0):
    """Whether ``valor`` holds a tensor (in a list, tuple, set, dict or plain object)."""
    if isinstance(valor, torch.Tensor):
        return True
    if profundidad >= 3:
        return False
    if isinstance(valor, dict):
        return any(_tensores_dentro(v, profundidad + 1) for v in valor.values())
    if isinstance(valor, (list, tuple, set, frozenset)):
        return any(_tensores_dentro(v, profundidad + 1) for v in valor)
    if hasattr(valor, "__dict__") and not isinstance(valor, type) and not callable(valor):
        return any(_tensores_dentro(v, profundidad + 1) for v in vars(valor).values())
    return False


def _tensores_en_atributos(ctx):
    """The ``ctx`` attributes that hold tensors, directly or inside a container."""
    try:
        atributos = vars(ctx)
    except TypeError:
        return []
    return sorted(f"ctx.{nombre}" for nombre, valor in atributos.items()
                  if _tensores_dentro(valor))


def _describir_guardados(guardados, conocidos):
    """A name per saved tensor (which input or intermediate it equals) and their size;
    a saved ``None`` (what a Function saves in place of what it will not need) is skipped."""
    nombres, elementos = [], 0
    for tensor in guardados:
        if tensor is None:
            continue
        nombre = next((n for n, t in conocidos.items() if t.shape == tensor.shape
                       and t.dtype == tensor.dtype
                       and torch.equal(t.detach(), tensor.detach())), None)
        nombres.append(nombre or f"un tensor de forma {tuple(tensor.shape)}")
        elementos += int(tensor.numel())
    return nombres, elementos


def observar_ctx(salida, conocidos):
    """What a Function's ``ctx`` holds: saved tensors (named) and tensor attributes."""
    datos = {"guardados": None, "elementos_guardados": None, "atributos_tensor": []}
    if not es_function_propia(salida):
        return datos
    try:
        guardados = llamar(lambda: tuple(salida.grad_fn.saved_tensors))
        datos["guardados"], datos["elementos_guardados"] = _describir_guardados(guardados,
                                                                                conocidos)
    except ComprobacionFallida:
        pass
    datos["atributos_tensor"] = _tensores_en_atributos(salida.grad_fn)
    return datos


def observar_lo_guardado(funcion, tensores, segunda, otros, peso, intercalada=None):
    """Where backward reads its tensors from (see the module docstring): plain data.

    ``tensores``: the inputs of call A (copied); ``segunda``: those of call B, with the
    same ``requires_grad``; ``otros``: the arguments that are not tensors. ``intercalada``:
    (function, its arguments) of a call C with other settings (another beta, another fn),
    run after B's forward: A's backward must not see it (state kept on the class)."""
    guardados = {"a": [], "b": [], "c": []}
    cambiar = [False]

    def empaquetar(clave):
        def guardar(tensor):
            guardados[clave].append(tensor)
            return clave, len(guardados[clave]) - 1
        return guardar

    def desempaquetar(etiqueta):
        clave, i = etiqueta
        return guardados["b" if cambiar[0] and clave == "a" else clave][i]

    a = [_hoja(t, t.requires_grad) for t in tensores]
    b = [_hoja(s, t.requires_grad) for s, t in zip(segunda, tensores)]
    datos = {"tras_otro_forward": None, "de_la_otra": None, "con_lo_de_la_otra": None}
    try:
        salidas = []
        for clave, hojas in (("a", a), ("b", b)):
            with torch.autograd.graph.saved_tensors_hooks(empaquetar(clave), desempaquetar):
                salidas.append(llamar(funcion, *hojas, *otros))
        if intercalada is not None:
            otra_funcion, argumentos = intercalada
            with torch.autograd.graph.saved_tensors_hooks(empaquetar("c"), desempaquetar):
                llamar(otra_funcion, *[_hoja(t, t.requires_grad) if isinstance(t, torch.Tensor)
                                       else t for t in argumentos])
        if not all(type(s) is torch.Tensor and s.grad_fn is not None
                   and s.shape == peso.shape for s in salidas):
            return datos
        datos["tras_otro_forward"] = _gradientes(salidas[0], a, peso.clone(), retener=True)
        datos["de_la_otra"] = _gradientes(salidas[1], b, peso.clone())
        comparables = len(guardados["a"]) == len(guardados["b"]) and all(
            x.shape == y.shape and x.dtype == y.dtype
            for x, y in zip(guardados["a"], guardados["b"]))
        if comparables:
            cambiar[0] = True
            datos["con_lo_de_la_otra"] = _gradientes(salidas[0], a, peso.clone())
    except ComprobacionFallida:
        pass  # what raises is the gradient part's to say; this part sees nothing to judge
    return datos


def observar_function(funcion, entradas, tensores, otros, conocidos=None):
    """One call of an exercise of this chapter, observed as plain data.

    ``tensores`` and ``otros``: the names of the tensor and of the other arguments, in the
    order of the signature. ``conocidos(entradas, salida)``: named tensors to recognise
    among those ctx saved. ``entradas["tercera"]``, if there: other values of ``otros``
    for the interleaved call C of ``observar_lo_guardado``."""
    argumentos = [entradas[n] for n in (*tensores, *otros)]
    propios = {n: entradas[n] for n in tensores}
    peso = entradas["grad_output"]
    escrito = _Escrito()
    with torch.set_grad_enabled(entradas["con_grad"]):
        antes = estado(propios)
        observacion, salida = _llamada(funcion, *argumentos, escrito=escrito)
        modo = torch.is_grad_enabled()
        observacion.update(observar_ctx(salida, conocidos(entradas, salida) if conocidos
                                        else {}))
    datos = observar_gradientes(salida, [entradas[n] for n in tensores], peso, escrito)
    observacion.update(datos)
    despues = estado(propios)
    despues["modo de autograd"] = modo
    observacion.update(estado_antes=antes, estado_despues=despues,
                       lo_guardado=None, gradcheck=None, escrito=escrito.leido())
    if datos["gradientes"] is not None:
        segunda = [entradas["segunda"][n] for n in tensores]
        intercalada = None
        if "tercera" in entradas:
            intercalada = (funcion, [*segunda, *(entradas["tercera"][n] for n in otros)])
        observacion["lo_guardado"] = observar_lo_guardado(
            funcion, [entradas[n] for n in tensores], segunda, [entradas[n] for n in otros],
            peso, intercalada)
    return observacion


def pasa_gradcheck(funcion, entradas):
    """``torch.autograd.gradcheck`` in float64: True, False, or None if it raised."""
    try:
        return bool(llamar(torch.autograd.gradcheck, funcion, tuple(entradas),
                           raise_exception=False))
    except ComprobacionFallida:
        return None


# ---------------------------------------------------------------- common checks
def _espera_grafo(caso):
    return caso.datos["con_grad"] and any(caso.datos["requiere"])


def _tensor_de_salida(caso, nombre="la salida"):
    """The forward result, which must be a tensor of the expected shape to go on."""
    esperado = caso.datos["esperado"]["salida"]
    resultado = caso.resultado
    if type(resultado) is not torch.Tensor or resultado.shape != esperado.shape:
        comparar(nombre, resultado, esperado)  # None, type or shape: says which
    if not caso.datos["con_grad"] and caso.datos.get("con_grafo"):
        fallar("grafo_bajo_no_grad")
    return resultado


def _nombrar(nombre, obtenido, esperado, candidatos, requeridos=None):
    """The named mistake whose result ``obtenido`` is, among ``candidatos``: a list of
    (diagnosis id, facts, tensor or list of tensors). Only the items in ``requeridos``
    (indices of a list) are compared; a candidate equal to the right answer is skipped."""
    def lista(t):
        return list(t) if isinstance(t, (list, tuple)) else [t]

    obtenidos, esperados = lista(obtenido), lista(esperado)
    indices = range(len(esperados)) if requeridos is None else requeridos

    def igual(a, b):
        return all(type(a[i]) is torch.Tensor and a[i].shape == b[i].shape
                   and a[i].dtype == b[i].dtype and cerca(a[i], b[i]) for i in indices)

    if igual(obtenidos, esperados):
        return  # right within tolerance, however near a slip's value it also is
    for diagnostico, hechos, candidato in candidatos:
        candidato = lista(candidato)
        if not igual(candidato, esperados) and igual(obtenidos, candidato):
            fallar(diagnostico, **{"nombre": nombre, **hechos})


def _cambio_lo_que_recibe(caso, obtenido, esperado, requeridos=None):
    """A wrong gradient from a call that changed the values it was given (``x.mul_``...):
    that change is the mistake to name (backward then works on other numbers)."""
    def lista(t):
        return list(t) if isinstance(t, (list, tuple)) else [t]

    obtenidos, esperados = lista(obtenido), lista(esperado)
    indices = range(len(esperados)) if requeridos is None else requeridos
    if all(type(obtenidos[i]) is torch.Tensor and obtenidos[i].shape == esperados[i].shape
           and obtenidos[i].dtype == esperados[i].dtype and cerca(obtenidos[i], esperados[i])
           for i in indices):
        return
    antes, despues = caso.datos["estado_antes"], caso.datos["estado_despues"]
    valores = [n for n in cambios(antes, despues) if "." not in n and n != "modo de autograd"]
    if valores:
        verificar_sin_efectos(caso)


def _verificar_backward(caso, nombre):
    """The common checks on the engine's gradients before comparing their values."""
    datos = caso.datos
    if not datos["con_grafo"]:
        fallar("salida_sin_grafo")
    if datos["error_backward"] is not None:
        raise datos_a_error(datos["error_backward"])
    if datos["grad_output_modificado"]:
        fallar("grad_output_modificado")
    gradientes = datos["gradientes"]
    if gradientes is None:
        fallar("tipo", nombre="la salida", esperado="un tensor de la forma de la entrada",
               tipo="otra forma")
    return gradientes


def _function_propia(caso):
    if not caso.datos["funcion_propia"]:
        fallar("sin_function_propia", nodo=caso.datos["nodo"])
    _salida_normal(caso)


def _salida_normal(caso):
    """The output can go on through autograd: not an inference tensor."""
    if caso.datos.get("salida_de_inferencia"):
        fallar("salida_de_inferencia")


def _sin_escribir(caso):
    """The graded function writes nothing (no debug print, nothing on stderr)."""
    if caso.datos.get("escrito"):
        fallar("escribe_salida", texto=caso.datos["escrito"].strip().splitlines()[0][:80]
               if caso.datos["escrito"].strip() else "espacios")


def _iguales(a, b):
    """Two lists of gradients (None where not computed) equal within the dtype's tolerance."""
    if a is None or b is None or len(a) != len(b):
        return a == b
    for x, y in zip(a, b):
        if (x is None) != (y is None):
            return False
        if x is not None and not (type(x) is torch.Tensor and type(y) is torch.Tensor
                                  and x.shape == y.shape and x.dtype == y.dtype
                                  and torch.allclose(x, y, equal_nan=True,
                                                     rtol=1e-5, atol=1e-7)):
            return False
    return True


def _lee_de_ctx(caso):
    """backward reads what this call saved: not a shared global, not an attribute or a
    variable outside the Function (see ``observar_lo_guardado``)."""
    datos = caso.datos
    if datos["atributos_tensor"]:
        fallar("tensores_en_ctx", atributos=", ".join(datos["atributos_tensor"]))
    lo_guardado = datos["lo_guardado"]
    if lo_guardado is None or lo_guardado["tras_otro_forward"] is None:
        return  # no backward ran: the gradient part says why
    if not _iguales(lo_guardado["tras_otro_forward"], datos["gradientes"]):
        fallar("function_estado_compartido")
    otra, cambiada = lo_guardado["de_la_otra"], lo_guardado["con_lo_de_la_otra"]
    if cambiada is not None and not _iguales(cambiada, otra):
        fallar("function_lee_fuera_de_ctx")


def _backward_analitico(caso):
    if caso.datos["autograd_en_backward"]:
        fallar("function_autograd_en_backward",
               usos=", ".join(caso.datos["autograd_en_backward"][:3]))


def _sin_efectos(caso):
    verificar_sin_efectos(caso)
    _sin_escribir(caso)


def _en_casos_con_grafo(verificar):
    """A check that applies only where a backward is expected (grad mode on, and some
    input requires grad); elsewhere there is nothing for it to judge."""
    def parte(caso):
        if _espera_grafo(caso):
            verificar(caso)
    return parte


def _marcar(requiere, grad_vieja, generador, *tensores):
    """requires_grad as drawn, and a stale ``.grad`` that the function must leave alone."""
    for tensor, pide in zip(tensores, requiere):
        tensor.requires_grad_(pide)
        if grad_vieja and pide:
            tensor.grad = torch.randn(tensor.shape, generator=generador, dtype=tensor.dtype)


# ---------------------------------------------------------------- exercise 1: stable_softplus
def construir_softplus(generador, forma):
    """x, beta, an upstream gradient, the inputs of a second call and the caller's grad mode.

    ``forma`` = (shape of x, beta, dtype, grad mode on, x requires grad, stale x.grad,
    exponent k of two huge extremes or 0). Unless x is 0-dim, it holds seven points,
    beta·x = 0 (where σ is 1/2), ±60, ±200 and ±1000 (exp overflows in float32 and
    float64; 200 in float32 only, below a threshold of 700), and two more, beta·x = ±10^k,
    when k > 0; the rest are normal values of scale 3/beta.
    """
    forma_x, beta, nombre_dtype, con_grad, requiere, grad_vieja, k = forma
    dtype = getattr(torch, nombre_dtype)
    numel = 1
    for n in forma_x:
        numel *= n
    if len(forma_x) == 0:
        x = 3 * torch.randn((), generator=generador, dtype=dtype) / beta
    else:
        extremos = [-1000.0, 1000.0, -60.0, 60.0, 0.0, -200.0, 200.0] + (
            [-10.0 ** k, 10.0 ** k] if k else [])
        extremos = extremos[:numel]  # a smaller x (the tests' own) holds the first ones
        normales = 3 * torch.randn(numel - len(extremos), generator=generador, dtype=dtype)
        x = torch.cat([normales / beta, torch.tensor(extremos, dtype=dtype) / beta])
        x = x.reshape(forma_x)
    peso = torch.randn(x.shape, generator=generador, dtype=dtype)
    segunda = {"x": 3 * torch.randn(x.shape, generator=generador, dtype=dtype) / beta}
    _marcar([requiere], grad_vieja, generador, x)
    return {"x": x, "beta": beta, "grad_output": peso, "segunda": segunda,
            "con_grad": con_grad, "tercera": {"beta": 1.5 * beta + 0.25}}


def contexto_softplus(forma):
    return {"con_grad": forma[3], "requiere": (forma[4],), "beta": forma[1]}


def candidatos_softplus(x, beta, grad_output):
    """What the usual slips give, computed in float64 (then in x's dtype), as (id, facts,
    value): for the output and for the gradient of x."""
    xd, g = x.detach().double(), grad_output.double()
    salida = torch.logaddexp(beta * xd, torch.zeros_like(xd)) / beta
    s = torch.sigmoid(beta * xd)
    grad = [("sin_grad_output", {}, s), ("sigmoide_sin_beta", {}, g * torch.sigmoid(xd)),
            ("gradiente_por_beta", {}, g * beta * s), ("gradiente_entre_beta", {}, g * s / beta),
            ("sigmoide_invertida", {}, g * torch.sigmoid(-beta * xd)),
            ("derivada_cero_en_el_origen", {}, g * s * (xd != 0))]
    return {"salida": [("softplus_sin_dividir_por_beta", {}, (salida * beta).to(x.dtype))],
            "grad": [(d, h, v.to(x.dtype)) for d, h, v in grad]}


def observar_softplus(stable_softplus, entradas):
    observacion = observar_function(stable_softplus, entradas, ("x",), ("beta",))
    if observacion["gradientes"] is not None:
        beta = entradas["beta"]
        puntos = (torch.linspace(-3, 3, 7, dtype=torch.float64) / beta + 0.05).requires_grad_(True)
        observacion["gradcheck"] = pasa_gradcheck(lambda t: stable_softplus(t, beta), [puntos])
    return observacion


def _salida_softplus(caso):
    resultado = _tensor_de_salida(caso)
    esperado = caso.datos["esperado"]
    if (type(resultado) is torch.Tensor and resultado.dtype == esperado["salida"].dtype
            and torch.isfinite(esperado["salida"]).all() and not torch.isfinite(resultado).all()):
        fallar("softplus_desborda", nombre="la salida")
    _nombrar("la salida", resultado, esperado["salida"], esperado["candidatos"]["salida"])
    comparar("la salida", resultado, esperado["salida"])


def _gradiente_softplus(caso):
    esperado = caso.datos["esperado"]
    (obtenido,) = _verificar_backward(caso, "el gradiente de x")
    correcto = esperado["grads"][0]
    if (type(obtenido) is torch.Tensor and obtenido.shape == correcto.shape
            and obtenido.dtype == correcto.dtype and not torch.isfinite(obtenido).all()):
        x = caso.datos["originales"]["x"]["valores"]
        grandes = x.double().abs() * caso.datos["beta"] > 80
        fallar("no_finito" if not torch.isfinite(obtenido[~grandes]).all()
               else "sigmoide_desborda", nombre="el gradiente de x")
    _cambio_lo_que_recibe(caso, obtenido, correcto)
    _nombrar("el gradiente de x", obtenido, correcto, esperado["candidatos"]["grad"])
    if caso.datos["gradcheck"] is False:
        fallar("gradcheck_falla")
    comparar("el gradiente de x", obtenido, correcto)


def _function_softplus(caso):
    _function_propia(caso)
    _lee_de_ctx(caso)
    _backward_analitico(caso)


STABLE_SOFTPLUS = Ejercicio(
    funcion="stable_softplus",
    partes=[
        Parte("forward estable (también con |beta·x| enorme) y bajo no_grad", 0.75,
              _salida_softplus),
        Parte("backward analítico: grad_output · σ(beta·x) (gradcheck)", 0.75,
              _en_casos_con_grafo(_gradiente_softplus)),
        Parte("una Function propia cuyo backward lee lo guardado con save_for_backward", 0.25,
              _en_casos_con_grafo(_function_softplus)),
        Parte("no cambia nada de lo que recibe", 0.25, _sin_efectos, requisito=True),
    ],
    construir=construir_softplus, observar=observar_softplus, contexto=contexto_softplus)


def softplus_por_autograd(x, beta, grad_output, *resto):
    """The public oracle: logaddexp(beta·x, 0) / beta, differentiated by autograd."""
    with torch.enable_grad():
        t = x.detach().clone().requires_grad_(True)
        salida = torch.logaddexp(beta * t, torch.zeros_like(t)) / beta
        (grad,) = torch.autograd.grad(salida, t, grad_output)
    return {"salida": salida.detach(), "grads": [grad],
            "candidatos": candidatos_softplus(x, beta, grad_output)}


FORMA_PUBLICA_SOFTPLUS = ((10,), 2.0, "float64", True, True, False, 0)
# Also float32 with a stale .grad, and a call under no_grad.
FORMAS_PUBLICAS_SOFTPLUS = (FORMA_PUBLICA_SOFTPLUS, ((3, 4), 0.5, "float32", True, True, True, 0),
                            ((8,), 3.0, "float64", False, True, False, 0))


def comprobar_stable_softplus(stable_softplus):
    """Comprobación pública: salida, gradiente y ``gradcheck`` frente a autograd sobre
    ``logaddexp``."""
    casos = [caso_en_proceso(STABLE_SOFTPLUS, stable_softplus, 1, forma, softplus_por_autograd)
             for forma in FORMAS_PUBLICAS_SOFTPLUS]
    comprobar_casos(STABLE_SOFTPLUS.partes, casos,
                    "Forward estable, backward correcto (gradcheck incluido) y una Function "
                    "propia que lee lo que guardó.")


# ---------------------------------------------------------------- exercise 2: linear_tanh
TENSORES_LINEAL = ("x", "weight", "bias")


def construir_lineal_tanh(generador, forma):
    """x (N, D), weight (H, D), bias (H,), an upstream gradient (N, H), the inputs of a
    second call and the caller's grad mode.

    ``forma`` = (N, D, H, dtype, which of x, weight, bias require grad, grad mode on,
    stale ``.grad`` on those that require grad)."""
    N, D, H, nombre_dtype, requiere, con_grad, grad_vieja = forma
    dtype = getattr(torch, nombre_dtype)

    def normal(*dimensiones, escala=1.0):
        return escala * torch.randn(*dimensiones, generator=generador, dtype=dtype)

    x, weight, bias = normal(N, D), normal(H, D, escala=D ** -0.5), normal(H, escala=0.5)
    if N > 1:  # the last row makes the first preactivation 100 + bias[0]: tanh
        # saturates, and exp(2z) overflows in float32
        x[-1] = 100 * torch.sign(weight[0]) / weight[0].abs().sum()
    peso = normal(N, H)
    segunda = {"x": normal(N, D), "weight": normal(H, D, escala=D ** -0.5),
               "bias": normal(H, escala=0.5)}
    _marcar(requiere, grad_vieja, generador, x, weight, bias)
    return {"x": x, "weight": weight, "bias": bias, "grad_output": peso, "segunda": segunda,
            "con_grad": con_grad}


def _conocidos_lineal(entradas, salida):
    x, weight, bias = (entradas[n] for n in TENSORES_LINEAL)
    with torch.no_grad():
        preactivacion = x @ weight.T + bias
    return {"x": x, "weight": weight, "bias": bias, "la salida": salida,
            "la preactivación": preactivacion}


def observar_lineal_tanh(linear_tanh, entradas):
    observacion = observar_function(linear_tanh, entradas, TENSORES_LINEAL, (),
                                    _conocidos_lineal)
    if observacion["gradientes"] is not None:
        pequenas = [entradas[n].detach()[:3, :3] if entradas[n].dim() == 2
                    else entradas[n].detach()[:3] for n in TENSORES_LINEAL]
        observacion["gradcheck"] = pasa_gradcheck(
            linear_tanh, [t.double().clone().requires_grad_(True) for t in pequenas])
    return observacion


def contexto_lineal_tanh(forma):
    N, D, H = forma[:3]
    return {"maximo_guardado": N * D + H * D + N * H, "requiere": tuple(forma[4]),
            "con_grad": forma[5], "N": N}


def candidatos_lineal_tanh(x, weight, bias, grad_output):
    """What the usual slips in the derivative of tanh give, as (id, facts, [grad_x,
    grad_weight, grad_bias]), computed in float64 and returned in x's dtype."""
    xd, wd, bd, g = (t.detach().double() for t in (x, weight, bias, grad_output))
    z = xd @ wd.T + bd
    y = torch.tanh(z)

    def gradientes(dz):
        return [v.to(x.dtype) for v in (dz @ wd, dz.T @ xd, dz.sum(0))]

    formulas = {"1 − y": 1 - y, "1 − z²": 1 - z**2, "1 − tanh(y)²": 1 - torch.tanh(y) ** 2,
                "1, sin la derivada de tanh": torch.ones_like(y), "y²": y**2,
                "1 + y²": 1 + y**2}
    candidatos = [("derivada_tanh", {"formula": f}, gradientes(g * d))
                  for f, d in formulas.items()]
    candidatos.append(("sin_grad_output", {}, gradientes(1 - y**2)))
    correctos = gradientes(g * (1 - y**2))
    candidatos.append(("grad_bias_media", {"nombre": "el gradiente de bias"},
                       [*correctos[:2], correctos[2] / x.shape[0]]))
    return candidatos


def _salida_lineal_tanh(caso):
    comparar("la salida", _tensor_de_salida(caso), caso.datos["esperado"]["salida"])


def _gradientes_lineal_tanh(caso):
    gradientes = _verificar_backward(caso, "los gradientes")
    esperados = caso.datos["esperado"]["grads"]
    requeridos = [i for i, pide in enumerate(caso.datos["requiere"]) if pide]
    nombres = [f"el gradiente de {n}" for n in TENSORES_LINEAL]
    for i in requeridos:
        if gradientes[i] is None:
            fallar("es_none", nombre=nombres[i])
    _cambio_lo_que_recibe(caso, gradientes, esperados, requeridos)
    _nombrar("los gradientes", gradientes, esperados, caso.datos["esperado"]["candidatos"],
             requeridos)
    if caso.datos["gradcheck"] is False:
        fallar("gradcheck_falla")
    exigir(diagnosticar_lista("grads", [gradientes[i] for i in requeridos],
                              [esperados[i] for i in requeridos]))


def _guarda_lo_justo(caso):
    _function_propia(caso)
    datos = caso.datos
    if datos["atributos_tensor"]:
        fallar("tensores_en_ctx", atributos=", ".join(datos["atributos_tensor"]))
    if datos["guardados"] is None:
        fallar("es_none", nombre="ctx.saved_tensors")
    if datos["elementos_guardados"] > datos["maximo_guardado"]:
        fallar("guarda_de_mas", elementos=datos["elementos_guardados"],
               maximo=datos["maximo_guardado"], guardados=", ".join(datos["guardados"]))
    if "bias" in datos["guardados"]:
        fallar("guarda_el_sesgo", guardados=", ".join(datos["guardados"]))
    _lee_de_ctx(caso)
    _backward_analitico(caso)


def _mismo_valor(tensor, esperado):
    """``tensor`` holds ``esperado``'s values, within the rounding of another order of sums."""
    if tensor.shape != esperado.shape or not esperado.numel():
        return False
    escala = max(esperado.detach().abs().max().item(), 1e-3)
    return bool(torch.allclose(tensor.detach().double(), esperado.detach().double(),
                               rtol=1e-3, atol=1e-5 * escala))


def _una_fila_es_el_sesgo(caso, grad_bias):
    """Whether one row of ∂L/∂z = grad_output ⊙ (1 − y²) equals the bias's gradient."""
    y = caso.datos["esperado"]["salida"]
    dz = caso.datos["originales"]["grad_output"]["valores"] * (1 - y * y)
    return any(_mismo_valor(fila, grad_bias) for fila in dz)


def _respeta_needs_input_grad(caso):
    _function_propia(caso)
    datos = caso.datos
    if datos["error_backward"] is not None:
        raise datos_a_error(datos["error_backward"])
    devuelto = datos["devuelto"]
    if devuelto is None:
        return  # the engine never ran this backward (nothing required grad)
    for nombre, pide, valor in zip(TENSORES_LINEAL, datos["requiere"], devuelto):
        if not pide and valor is not None:
            fallar("ignora_needs_input_grad", nombre=nombre)
    # Computed means its value appeared in backward, not only its shape: a loop over rows
    # makes tensors of the bias's shape, and where one row of ∂L/∂z alone equals the bias's
    # gradient (N = 1, or the other rows 0: a saturated tanh) no backward can avoid it.
    calculados = datos.get("tensores_en_backward") or ()
    for nombre, pide, esperado in zip(TENSORES_LINEAL, datos["requiere"],
                                      datos["esperado"]["grads"]):
        if pide or (nombre == "bias" and _una_fila_es_el_sesgo(caso, esperado)):
            continue
        if any(isinstance(t, torch.Tensor) and _mismo_valor(t, esperado) for t in calculados):
            fallar("calcula_sin_necesidad", nombre=nombre)
    # Only presence and shape here: the values are the gradient part's (no double penalty).
    for nombre, pide, obtenido, esperado in zip(TENSORES_LINEAL, datos["requiere"], devuelto,
                                                datos["esperado"]["grads"]):
        if pide and (not isinstance(obtenido, torch.Tensor) or obtenido.shape != esperado.shape):
            diagnostico = diagnosticar_tensor(f"el gradiente de {nombre}", obtenido, esperado)
            if diagnostico is not None:
                raise ComprobacionFallida(diagnostico)


LINEAR_TANH = Ejercicio(
    funcion="linear_tanh",
    partes=[
        Parte("forward: tanh(x·Wᵀ + b), también bajo no_grad", 0.5, _salida_lineal_tanh),
        Parte("backward: gradientes de x, weight y bias (gradcheck)", 1.0,
              _en_casos_con_grafo(_gradientes_lineal_tanh)),
        Parte("guarda solo lo necesario con save_for_backward y backward lo lee de ahí", 0.75,
              _en_casos_con_grafo(_guarda_lo_justo)),
        Parte("needs_input_grad: None para cada entrada que no requiere gradiente", 0.5,
              _en_casos_con_grafo(_respeta_needs_input_grad)),
        Parte("no cambia nada de lo que recibe", 0.25, _sin_efectos, requisito=True),
    ],
    construir=construir_lineal_tanh, observar=observar_lineal_tanh,
    contexto=contexto_lineal_tanh)


def lineal_tanh_por_autograd(x, weight, bias, grad_output, *resto):
    """The public oracle: autograd through torch.nn.functional.linear and torch.tanh."""
    with torch.enable_grad():
        hojas = [t.detach().clone().requires_grad_(True) for t in (x, weight, bias)]
        salida = torch.tanh(torch.nn.functional.linear(*hojas))
        grads = torch.autograd.grad(salida, hojas, grad_output)
    return {"salida": salida.detach(), "grads": list(grads),
            "candidatos": candidatos_lineal_tanh(x, weight, bias, grad_output)}


# The same inputs three times: everything requires grad, then x does not (it is the data),
# then only x does (a frozen layer); then H = 1 in float32 with stale .grad, and no_grad.
FORMAS_PUBLICAS_LINEAL = ((5, 4, 3, "float64", (True, True, True), True, False),
                          (5, 4, 3, "float64", (False, True, True), True, False),
                          (5, 4, 3, "float64", (True, False, False), True, False),
                          (2, 4, 1, "float32", (True, True, True), True, True),
                          (5, 4, 3, "float64", (True, True, True), False, False))


def comprobar_linear_tanh(linear_tanh):
    """Comprobación pública: valores y gradientes frente a autograd, lo que guardó ``ctx`` y
    ``needs_input_grad``."""
    casos = [caso_en_proceso(LINEAR_TANH, linear_tanh, 2, forma, lineal_tanh_por_autograd)
             for forma in FORMAS_PUBLICAS_LINEAL]
    comprobar_casos(LINEAR_TANH.partes, casos,
                    "Gradientes correctos, solo lo necesario guardado (y leído de ctx) y "
                    "needs_input_grad respetado.")


# ---------------------------------------------------------------- exercise 3: quantize_ste
def paso_exacto(step, levels, dtype):
    """Whether step and levels·step are exact in ``dtype`` (then |x| = levels·step is
    drawn and judged; otherwise no x is drawn within rounding of the boundary)."""
    return all(float(torch.tensor(v, dtype=dtype)) == v for v in (step, levels * step))


def _lejos_de_ambiguedades(x, step, levels, exacto):
    """Values moved away from rounding ties (x/step halfway between two integers) and,
    unless they sit on it exactly and it is exact, from the boundary |x| = levels·step."""
    limite = levels * step
    t = x.double() / step
    fraccion = t - torch.floor(t)
    x = torch.where((fraccion - 0.5).abs() < 0.02, x + 0.1 * step, x)
    distancia = x.double().abs() - limite
    en_el_borde = distancia == 0 if exacto else torch.zeros_like(distancia, dtype=torch.bool)
    cerca_del_borde = (distancia.abs() < 0.02 * step) & ~en_el_borde
    lejos = torch.sign(x) * (limite + torch.where(distancia > 0, 0.1, -0.1) * step)
    return torch.where(cerca_del_borde, lejos.to(x.dtype), x)


def construir_cuantizador(generador, forma):
    """x, step, levels, an upstream gradient, a second call's x and the caller's grad mode.

    ``forma`` = (shape of x, step, levels, dtype, grad mode on, x requires grad, stale
    x.grad). Unless x is 0-dim: about a fifth of the first values fall outside the range,
    one sits exactly on each end when that end is exact in binary, and four more lie
    beyond the ends, one on each side within half a step of it (where a mask on the rounded
    value still passes the gradient) and one further out, beyond ±levels too; one is 0,
    and, when the ends are exact, one lies just outside each (by step/4096). None is on a
    rounding tie, nor, when the boundary is not exact, within rounding of it.
    """
    forma_x, paso, niveles, nombre_dtype, con_grad, requiere, grad_vieja = forma
    dtype = getattr(torch, nombre_dtype)
    limite = niveles * paso
    exacto = paso_exacto(paso, niveles, dtype)
    numel = 1
    for n in forma_x:
        numel *= n
    if len(forma_x) == 0:
        x = 1.5 * limite * torch.randn((), generator=generador, dtype=dtype)
        peso = torch.randn((), generator=generador, dtype=dtype)
        otra = 1.5 * limite * torch.randn((), generator=generador, dtype=dtype)
    else:
        n = numel - 4
        x = 0.8 * limite * torch.randn(n, generator=generador, dtype=dtype)
        arriba, abajo, *casi = torch.randperm(n, generator=generador)[:5].tolist()
        if exacto:
            x[arriba], x[abajo] = limite, -limite
        peso = torch.randn(n, generator=generador, dtype=dtype)
        u = torch.rand(4, generator=generador, dtype=torch.float64)
        lejos = max(limite, niveles)  # beyond ±levels too, where a range of ±levels shows
        fuera = torch.tensor([limite + (0.15 + 0.7 * u[0].item()) * paso / 2,
                              -limite - (0.15 + 0.7 * u[1].item()) * paso / 2,
                              lejos + (0.6 + 2.4 * u[2].item()) * paso,
                              -lejos - (0.6 + 2.4 * u[3].item()) * paso], dtype=dtype)
        x = torch.cat([x, fuera]).reshape(forma_x)
        peso = torch.cat([peso, torch.randn(4, generator=generador, dtype=dtype)])
        peso = peso.reshape(forma_x)
        otra = 1.2 * limite * torch.randn(forma_x, generator=generador, dtype=dtype)
    x = _lejos_de_ambiguedades(x, paso, niveles, exacto)
    if len(forma_x):
        plano = x.view(-1)
        plano[casi[2]] = 0.0  # the origin, where the straight-through gradient is whole
        if exacto:  # just outside each end, by step/4096: outside, however little
            plano[casi[0]], plano[casi[1]] = limite + paso / 4096, -limite - paso / 4096
    otra = _lejos_de_ambiguedades(otra, paso, niveles, False)
    _marcar([requiere], grad_vieja, generador, x)
    return {"x": x, "step": paso, "levels": niveles, "grad_output": peso,
            "segunda": {"x": otra}, "con_grad": con_grad,
            "tercera": {"step": 1.5 * paso, "levels": niveles + 1}}


def observar_cuantizador(quantize_ste, entradas):
    return observar_function(quantize_ste, entradas, ("x",), ("step", "levels"))


def contexto_cuantizador(forma):
    return {"con_grad": forma[4], "requiere": (forma[5],)}


def candidatos_cuantizador(x, step, levels, grad_output):
    """What the usual slips give, as (id, facts, value): for the output and the gradient."""
    xd, g = x.detach(), grad_output
    limite = levels * step
    recortado = xd.clamp(-limite, limite)
    dentro = xd.abs() <= limite
    borde = xd.abs() == limite
    salida = [("cuantiza_sin_recorte", {}, torch.round(xd / step) * step),
              ("cuantiza_sin_escalar", {}, torch.round(recortado / step)),
              ("rango_sin_step", {}, torch.round(xd.clamp(-levels, levels) / step) * step)]
    salida += [("redondeo_equivocado", {"como": como}, getattr(torch, f)(recortado / step) * step)
               for f, como in (("trunc", "hacia el cero (trunc)"), ("floor", "abajo (floor)"),
                               ("ceil", "arriba (ceil)"))]
    grad = [("redondeo_sin_ste", {}, torch.zeros_like(g)), ("ste_sin_recorte", {}, g),
            ("ste_recorte_un_lado", {"lado": "−levels·step"}, g * (xd <= limite)),
            ("ste_recorte_un_lado", {"lado": "levels·step"}, g * (xd >= -limite)),
            ("ste_mascara_redondeada", {}, g * (torch.round(xd / step).abs() <= levels)),
            ("ste_borde_excluido", {}, g * (xd.abs() < limite)),
            ("derivada_cero_en_el_origen", {}, g * dentro * (xd != 0)),
            ("ste_borde_a_medias", {}, g * dentro - 0.5 * g * borde),
            ("rango_sin_step", {}, g * (xd.abs() <= levels))]
    return {"salida": salida, "grad": grad}


def _salida_cuantizada(caso):
    resultado = _tensor_de_salida(caso)
    esperado = caso.datos["esperado"]
    _nombrar("la salida", resultado, esperado["salida"], esperado["candidatos"]["salida"])
    comparar("la salida", resultado, esperado["salida"])


def _gradiente_ste(caso):
    (obtenido,) = _verificar_backward(caso, "el gradiente de x")
    esperado = caso.datos["esperado"]
    _cambio_lo_que_recibe(caso, obtenido, esperado["grads"][0])
    _nombrar("el gradiente de x", obtenido, esperado["grads"][0], esperado["candidatos"]["grad"])
    comparar("el gradiente de x", obtenido, esperado["grads"][0])


def _cuantizador_sin_efectos(caso):
    verificar_sin_efectos(caso)
    _sin_escribir(caso)
    _salida_normal(caso)
    if _espera_grafo(caso):
        _lee_de_ctx(caso)


QUANTIZE_STE = Ejercicio(
    funcion="quantize_ste",
    partes=[
        Parte("forward: redondeo a la rejilla y recorte, también bajo no_grad", 1.0,
              _salida_cuantizada),
        Parte("backward: paso directo donde |x| ≤ levels·step, 0 fuera", 1.25,
              _en_casos_con_grafo(_gradiente_ste)),
        Parte("no cambia nada de lo que recibe; backward lee lo guardado", 0.25,
              _cuantizador_sin_efectos, requisito=True),
    ],
    construir=construir_cuantizador, observar=observar_cuantizador,
    contexto=contexto_cuantizador)


def cuantizador_por_busqueda(x, step, levels, grad_output, *resto):
    """The public oracle: the nearest point of the grid, found by search; a mask for the grad."""
    with torch.no_grad():
        rejilla = step * torch.arange(-levels, levels + 1, dtype=x.dtype)
        plano = x.detach().reshape(-1)
        cerca_de = (plano[:, None] - rejilla[None, :]).abs().argmin(dim=1)
        dentro = (x.detach().abs() <= levels * step).to(x.dtype)
    return {"salida": rejilla[cerca_de].reshape(x.shape), "grads": [grad_output * dentro],
            "candidatos": candidatos_cuantizador(x, step, levels, grad_output)}


FORMA_PUBLICA_CUANTIZADOR = ((16,), 0.25, 4, "float64", True, True, False)
# Also float32 with a step that is not exact in binary and a stale .grad, no_grad, and an
# x that does not require grad with autograd on (no graph either).
FORMAS_PUBLICAS_CUANTIZADOR = (FORMA_PUBLICA_CUANTIZADOR,
                               ((3, 5), 0.1, 3, "float32", True, True, True),
                               ((12,), 0.375, 2, "float64", False, True, False),
                               ((3, 4), 0.5, 3, "float32", True, False, False))


def comprobar_quantize_ste(quantize_ste):
    """Comprobación pública: los valores cuantizados y el gradiente de paso directo en un
    ejemplo."""
    casos = [caso_en_proceso(QUANTIZE_STE, quantize_ste, 3, forma, cuantizador_por_busqueda)
             for forma in FORMAS_PUBLICAS_CUANTIZADOR]
    comprobar_casos(QUANTIZE_STE.partes, casos,
                    "Valores cuantizados y gradiente de paso directo (con recorte) correctos.")


# ---------------------------------------------------------------- exercise 4: checkpoint_apply
def bloque_mlp(x, w1, b1, w2):
    """A residual MLP block: x + GELU(x·w1ᵀ + b1)·w2ᵀ."""
    return x + torch.nn.functional.gelu(x @ w1.T + b1) @ w2.T


def onda(x, a, b):
    """Two parameters, broadcast over the rows of x: sin(a·x)·b + x²/2."""
    return torch.sin(a * x) * b + 0.5 * x**2


def sin_parametros(x):
    """No parameters: tanh(x)·cumsum(x) along the rows."""
    return torch.tanh(x) * torch.cumsum(x, dim=-1)


# kind -> (fn, the names of its parameters)
FUNCIONES_CHECKPOINT = {"mlp": (bloque_mlp, ("w1", "b1", "w2")), "onda": (onda, ("a", "b")),
                        "sin parámetros": (sin_parametros, ())}
FUNCIONES_CHECKPOINT_NOMBRES = {fn: nombres for fn, nombres in FUNCIONES_CHECKPOINT.values()}


def construir_checkpoint(generador, forma):
    """fn, x (N, D), fn's parameters, an upstream gradient, a second call's inputs and the
    caller's grad mode.

    ``forma`` = (kind of fn, N, D, H, dtype, which of x and the parameters require grad,
    grad mode on, stale ``.grad`` on those that require grad)."""
    tipo, N, D, H, nombre_dtype, requiere, con_grad, grad_vieja = forma
    dtype = getattr(torch, nombre_dtype)
    fn, _ = FUNCIONES_CHECKPOINT[tipo]

    def normal(*dimensiones, escala=1.0):
        return escala * torch.randn(*dimensiones, generator=generador, dtype=dtype)

    def parametros():
        if tipo == "mlp":
            return (normal(H, D, escala=D ** -0.5), normal(H, escala=0.5),
                    normal(D, H, escala=H ** -0.5))
        return (normal(D), normal(D)) if tipo == "onda" else ()

    x, params = normal(N, D), parametros()
    peso = normal(N, D)
    segunda = {"x": normal(N, D), "params": parametros()}
    _marcar(requiere, grad_vieja, generador, x, *params)
    return {"fn": fn, "x": x, "params": params, "grad_output": peso, "segunda": segunda,
            "con_grad": con_grad}


def contexto_checkpoint(forma):
    return {"con_grad": forma[6], "requiere": tuple(forma[5]),
            "nombres": ("x", *FUNCIONES_CHECKPOINT[forma[0]][1])}


def _enganchados(argumentos, propios):
    """The caller's tensors that ``argumentos`` are still attached to (a gradient through
    one of them reaches the caller's tensor): the recomputation did not run on copies."""
    nombres = []
    with torch.enable_grad():
        for nombre, original in propios.items():
            for a in argumentos:
                if not (original.requires_grad and isinstance(a, torch.Tensor)
                        and a.requires_grad and a.shape == original.shape):
                    continue
                try:
                    (grad,) = torch.autograd.grad(a.sum(), [original], allow_unused=True)
                except RuntimeError:
                    continue
                if grad is not None:
                    nombres.append(nombre)
                    break
    return nombres


def observar_checkpoint(checkpoint_apply, entradas):
    """One call observed as plain data, as ``observar_function`` does, plus: how many times
    fn ran in the forward and in the backward, and the tensors autograd saved during the
    call that are not its inputs (``saved_tensors_hooks``)."""
    fn, x, params = entradas["fn"], entradas["x"], entradas["params"]
    tensores = (x, *params)
    propios = dict(zip(("x", *FUNCIONES_CHECKPOINT_NOMBRES[fn]), tensores))
    fase, llamadas, guardados, escrito, sin_copia = ["forward"], [], {}, _Escrito(), []

    def contada(*argumentos):
        llamadas.append(fase[0])
        if fase[0] == "backward":
            sin_copia.extend(_enganchados(argumentos, propios))
        return fn(*argumentos)

    def funcion(*argumentos):
        return checkpoint_apply(contada, *argumentos)

    def empaquetar(tensor):
        guardados[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    with torch.set_grad_enabled(entradas["con_grad"]):
        antes = estado(propios)
        with torch.autograd.graph.saved_tensors_hooks(empaquetar, lambda tensor: tensor):
            observacion, salida = _llamada(funcion, *tensores, escrito=escrito)
        modo = torch.is_grad_enabled()
        observacion.update(observar_ctx(salida, propios))
    for tensor in tensores:
        guardados.pop(tensor.untyped_storage().data_ptr(), None)
    fase[0] = "backward"
    datos = observar_gradientes(salida, list(tensores), entradas["grad_output"], escrito)
    fase[0] = "otras llamadas"
    observacion.update(datos)
    despues = estado(propios)
    despues["modo de autograd"] = modo
    observacion.update(estado_antes=antes, estado_despues=despues, lo_guardado=None,
                       escrito=escrito.leido(), sin_copia=sorted(set(sin_copia)),
                       intermedios=len(guardados),
                       bytes_intermedios=sum(guardados.values()),
                       llamadas_forward=llamadas.count("forward"),
                       llamadas_backward=llamadas.count("backward"))
    if datos["gradientes"] is not None:
        segunda = [entradas["segunda"]["x"], *entradas["segunda"]["params"]]
        def otra_fn(*argumentos):  # another fn for call C: twice this one
            return 2 * fn(*argumentos)

        intercalada = (lambda *argumentos: checkpoint_apply(otra_fn, *argumentos), segunda)
        observacion["lo_guardado"] = observar_lo_guardado(funcion, list(tensores), segunda, (),
                                                          entradas["grad_output"], intercalada)
    return observacion



def _salida_checkpoint(caso):
    comparar("la salida", _tensor_de_salida(caso), caso.datos["esperado"]["salida"])


def _gradientes_checkpoint(caso):
    datos = caso.datos
    if datos["con_grafo"] and datos["error_backward"] is not None:
        error = datos["error_backward"]
        if error["diagnostico"] == "forma_gradiente_function":
            fallar("checkpoint_orden_gradientes", **error["hechos"])
    grads = [n for n in cambios(datos["estado_antes"], datos["estado_despues"])
             if n.endswith(".grad")]
    if grads and datos["con_grafo"] and datos["error_backward"] is None:
        fallar("checkpoint_sin_detach",
               que=", ".join(f"`{n.removesuffix('.grad')}`" for n in grads))
    gradientes = _verificar_backward(caso, "los gradientes")
    esperados = datos["esperado"]["grads"]
    nombres = [f"el gradiente de {n}" for n in datos["nombres"]]
    requeridos = [i for i, pide in enumerate(datos["requiere"]) if pide]
    faltan = [i for i in requeridos if gradientes[i] is None]
    if faltan and 0 not in faltan and (0 not in requeridos
                                       or _iguales(gradientes[:1], esperados[:1])):
        fallar("checkpoint_sin_parametros", nombre=nombres[faltan[0]])
    for i in faltan:
        fallar("es_none", nombre=nombres[i])
    for nombre, pide, valor in zip(datos["nombres"], datos["requiere"], datos["devuelto"] or ()):
        if not pide and valor is not None:
            fallar("ignora_needs_input_grad", nombre=nombre)
    if datos.get("sin_copia") and datos["error_backward"] is None:
        fallar("checkpoint_recalcula_sin_copias",
               que=", ".join(f"`{n}`" for n in datos["sin_copia"]))
    exigir(diagnosticar_lista("grads", [gradientes[i] for i in requeridos],
                              [esperados[i] for i in requeridos]))


def _guarda_solo_las_entradas(caso):
    _function_propia(caso)
    datos = caso.datos
    if datos["intermedios"]:
        fallar("checkpoint_guarda_activaciones", n=datos["intermedios"],
               kib=datos["bytes_intermedios"] / 1024)
    if datos["llamadas_forward"] != 1:
        fallar("checkpoint_llamadas_fn", veces=datos["llamadas_forward"], donde="forward")
    _lee_de_ctx(caso)


def _recalcula_una_vez(caso):
    datos = caso.datos
    if datos["error_backward"] is not None:
        raise datos_a_error(datos["error_backward"])
    if datos["llamadas_backward"] != 1:
        fallar("checkpoint_llamadas_fn", veces=datos["llamadas_backward"], donde="backward")


CHECKPOINT_APPLY = Ejercicio(
    funcion="checkpoint_apply",
    partes=[
        Parte("forward: el valor de fn(x, *params), también bajo no_grad", 0.75,
              _salida_checkpoint),
        Parte("backward: gradientes de x y de cada parámetro, None donde no se piden", 1.5,
              _en_casos_con_grafo(_gradientes_checkpoint)),
        Parte("memoria: una Function que ejecuta fn una vez sin grafo y guarda solo las "
              "entradas", 0.75, _en_casos_con_grafo(_guarda_solo_las_entradas)),
        Parte("recálculo: backward ejecuta fn exactamente una vez", 0.5,
              _en_casos_con_grafo(_recalcula_una_vez)),
        Parte("no cambia nada de lo que recibe", 0.5, _sin_efectos, requisito=True),
    ],
    construir=construir_checkpoint, observar=observar_checkpoint, contexto=contexto_checkpoint)


def checkpoint_por_autograd(fn, x, params, grad_output, *resto):
    """The public oracle: plain autograd through fn, every activation kept."""
    with torch.enable_grad():
        hojas = [t.detach().clone().requires_grad_(True) for t in (x, *params)]
        salida = fn(*hojas)
        grads = torch.autograd.grad(salida, hojas, grad_output)
    return {"salida": salida.detach(), "grads": list(grads)}


# The residual block with everything requiring grad; the two-parameter function with x as
# data (no requires_grad), and a frozen parameter.
FORMAS_PUBLICAS_CHECKPOINT = (("mlp", 4, 3, 5, "float64", (True, True, True, True), True, False),
                              ("onda", 3, 4, 1, "float64", (False, True, False), True, False),
                              ("sin parámetros", 3, 2, 1, "float32", (True,), False, False))


def comprobar_checkpoint_apply(checkpoint_apply):
    """Comprobación pública: valores y gradientes frente a autograd sin checkpoint, lo que
    guardó el forward, cuántas veces se ejecutó ``fn`` y ``needs_input_grad``."""
    casos = [caso_en_proceso(CHECKPOINT_APPLY, checkpoint_apply, 4, forma,
                             checkpoint_por_autograd) for forma in FORMAS_PUBLICAS_CHECKPOINT]
    comprobar_casos(CHECKPOINT_APPLY.partes, casos,
                    "Mismos gradientes que autograd, solo las entradas guardadas y fn "
                    "recalculada una vez en backward.")


# In notebook order.
EJERCICIOS = ejercicios(STABLE_SOFTPLUS, QUANTIZE_STE, LINEAR_TANH, CHECKPOINT_APPLY)
