"""Chapter 2: how each exercise is built, observed and scored, and its public checks.

Injected into the chapter 2 student notebook by the build; the hidden tests use the
same exercises on other inputs against the reference. What a call does to autograd
(tensors saved for backward, the grad mode it leaves behind, which parameters still
require grad) is observed here, in the student's kernel, and handed over as plain data.
The public oracles are a distillation loss and a softmax written out by hand and the
parameter names themselves, never the reference.
"""

from collections import OrderedDict

import torch

from autograder.student.compare import (
    ComprobacionFallida,
    Ejercicio,
    Parte,
    cambios,
    caso_en_proceso,
    comprobar,
    datos_a_error,
    ejercicios,
    error_a_datos,
    estado,
    exigir,
    fallar,
    llamar,
    observar_llamada,
    verificar_sin_efectos,
)
from autograder.student.diagnosis import Diagnostico, cerca, diagnosticar_tensor
from autograder.student.messages import registrar

__all__ = ["comprobar_distillation_loss", "comprobar_predict", "comprobar_freeze_all_but_head"]

# id -> (title, Spanish explanation, Spanish hint, English explanation)
MENSAJES = {
    "dimension_suprimida": (
        "Dimensión de tamaño 1 suprimida",
        "`{nombre}` tiene forma {forma}, se esperaba {forma_esperada}: desapareció una "
        "dimensión de tamaño 1 (un lote de una sola muestra, o una capa con una sola unidad "
        "o una sola clase, sigue teniendo esa dimensión).",
        "¿Quitas alguna dimensión (`squeeze`, un índice fijo)? El resultado tiene la forma que "
        "pide el enunciado también cuando alguna dimensión vale 1.",
        "`{nombre}` has shape {forma}, expected {forma_esperada}: a size-1 dimension was "
        "dropped."),
    "tensor_de_inferencia_guardado": (
        "Tensor de inferencia guardado para backward",
        "Autograd rechazó guardar un tensor de inferencia (*inference tensor*) para el pase "
        "hacia atrás: un tensor creado en `torch.inference_mode()` entró en una operación "
        "que se deriva y que necesita guardarlo.\n{detalle}",
        "¿En qué modo calculas la salida del profesor, y qué clase de tensor sale de ese "
        "modo? La sección 3 muestra qué pasa cuando uno de ellos vuelve a una pérdida que se "
        "deriva, y qué lo evita.",
        "Autograd refused to save an inference tensor for backward.\n{detalle}"),
    "perdida_sin_grafo": (
        "Pérdida sin grafo",
        "La pérdida que devuelves no tiene `grad_fn`: quien llame a `backward()` sobre ella "
        "recibirá un error, y el alumno no aprenderá nada.",
        "¿Qué parte del cálculo se hace sin grafo? Solo la salida del profesor es una "
        "constante; el pase hacia adelante del alumno tiene que registrarse.",
        "The returned loss has no grad_fn: the caller's backward() cannot run."),
    "alumno_sin_gradiente": (
        "El alumno no recibe gradiente",
        "Tras `backward()`, `{nombre}` sigue con `.grad = None`: el gradiente no llega al "
        "alumno.",
        "¿Sale la pérdida del pase hacia adelante del alumno, registrado en el grafo?",
        "After backward(), `{nombre}` has no .grad."),
    "gradiente_al_profesor": (
        "Gradiente hacia el profesor",
        "Tras `backward()` sobre tu pérdida, `{nombre}` recibió un gradiente: el pase hacia "
        "atrás atraviesa al profesor, y un optimizador que lo incluya lo movería.",
        "En la destilación la salida del profesor es un objetivo constante. ¿Se registra su "
        "pase hacia adelante en el grafo de la pérdida?",
        "After backward(), `{nombre}` (a teacher parameter) received a gradient."),
    "profesor_congelado": (
        "Profesor congelado",
        "`{nombre}` llegó entrenable y tu función lo dejó con `requires_grad=False`: el código "
        "que siga entrenando al profesor lo encontrará congelado.",
        "Congelar al profesor es cambiar su `requires_grad` para siempre, y el enunciado pide "
        "dejarlo como llegó. ¿Qué modo de autograd evita el gradiente solo durante el pase "
        "hacia adelante del profesor?",
        "`{nombre}` arrived trainable and was left frozen."),
    "backward_dentro": (
        "backward() dentro de la función",
        "Tu función cambió `{nombre}`: hizo un pase hacia atrás (o tocó `.grad`) por su cuenta. "
        "El `backward()` es de quien llama, que quizá suma otras pérdidas antes.",
        "Devuelve la pérdida sin recorrer el grafo: ¿qué línea de tu función escribe en el "
        "`.grad` de los parámetros?",
        "Your function changed `{nombre}`: it ran a backward pass itself."),
    "perdida_no_escalar": (
        "Pérdida no escalar",
        "La pérdida tiene forma {forma}; se esperaba un escalar, forma ().",
        "¿Reduces sobre las clases **y** sobre las muestras del lote?",
        "The loss has shape {forma}; expected a scalar."),
    "kl_media_por_elemento": (
        "Media sobre todos los elementos",
        "`{nombre}` vale 1/K del valor esperado: la KL se promedió sobre las N·K entradas, no "
        "sobre las N muestras.",
        "La divergencia KL de una muestra es la **suma** sobre sus K clases; luego se promedia "
        "sobre el lote. ¿Qué reducción de `F.kl_div` hace eso?",
        "`{nombre}` is 1/K of the expected value: the KL was averaged over N·K entries."),
    "kl_suma_del_lote": (
        "Suma sobre el lote",
        "`{nombre}` vale N veces el valor esperado: sumaste la KL de las muestras en lugar de "
        "promediarla.",
        "La pérdida es la media sobre las muestras del lote: ¿divides por N?",
        "`{nombre}` is N times the expected value: summed over the batch."),
    "sin_temperatura_al_cuadrado": (
        "Falta el factor T²",
        "`{nombre}` vale 1/T² del valor esperado: falta multiplicar por el cuadrado de la "
        "temperatura.",
        "A temperaturas altas, dividir los logits por T encoge los gradientes en un factor "
        "cercano a 1/T², y el enunciado lo compensa. ¿Está ese factor en tu pérdida?",
        "`{nombre}` is 1/T² of the expected value: the T² factor is missing."),
    "lote_suprimido": (
        "Lote de una muestra suprimido",
        "Con un lote de una sola muestra, `{nombre}` vale 1/K del valor esperado: la "
        "dimensión del lote desapareció (un `squeeze`, un índice fijo) y la media se tomó "
        "sobre las K clases, no sobre la única muestra.",
        "Un lote de una muestra sigue teniendo forma (1, K). ¿Quitas alguna dimensión antes "
        "de la softmax o de la KL?",
        "With a single-sample batch, `{nombre}` is 1/K of the expected value: the batch "
        "dimension was squeezed away."),
    "temperatura_sin_cuadrado": (
        "Factor T en vez de T²",
        "`{nombre}` vale 1/T del valor esperado: multiplicaste por la temperatura, no por su "
        "cuadrado.",
        "El factor que compensa el suavizado no es la temperatura sino su cuadrado. ¿Qué "
        "potencia de T multiplica tu pérdida?",
        "`{nombre}` is 1/T of the expected value: multiplied by T instead of T²."),
    "kl_con_probabilidades": (
        "Probabilidades en lugar de log-probabilidades",
        "`{nombre}` es la KL calculada con las **probabilidades** del alumno donde van sus "
        "logaritmos.",
        "`F.kl_div` espera como primer argumento log-probabilidades, no probabilidades. ¿Qué "
        "le pasas?",
        "`{nombre}` used the student's probabilities where log-probabilities go."),
    "temperatura_solo_alumno": (
        "Temperatura solo en el alumno",
        "`{nombre}` sale de dividir por T solo los logits del alumno: los del profesor "
        "también se dividen.",
        "Las dos distribuciones se suavizan con la misma temperatura: ¿divides por T los "
        "logits de los dos modelos?",
        "`{nombre}` divides only the student's logits by T."),
    "kl_invertida": (
        "KL en la dirección contraria",
        "`{nombre}` es KL(alumno ‖ profesor); el enunciado pide KL(profesor ‖ alumno).",
        "La KL no es simétrica: ¿qué distribución pesa los logaritmos? Aquí es la del "
        "profesor, el objetivo.",
        "`{nombre}` is KL(student || teacher), not KL(teacher || student)."),
    "prediccion_con_grafo": (
        "Predicción con grafo",
        "La salida de tu función tiene `grad_fn` (o `requires_grad=True`): el pase hacia "
        "adelante se registró en un grafo.",
        "Tu pase hacia adelante todavía registra el grafo. ¿Está dentro de un bloque "
        "`torch.inference_mode()` o `torch.no_grad()`? Ojo: llamarlos sin bloque no hace nada.",
        "The prediction has a grad_fn: the forward pass was recorded in a graph."),
    "salida_sin_modelo": (
        "La salida no sale del modelo",
        "Tu función devuelve {que}: no es una predicción calculada con el modelo, así que "
        "tampoco cuenta como una predicción hecha sin grafo.",
        "¿De dónde salen tus logits? Tienen que salir del modelo que recibe la función, y sin "
        "grafo.",
        "The output is {que}, not a prediction computed with the model."),
    "tensores_guardados": (
        "Tensores guardados para backward",
        "Durante la llamada se guardaron {n} tensores ({kib:.1f} KiB) para un pase hacia "
        "atrás: el pase hacia adelante se registró en un grafo, y la salida lo mantiene vivo.",
        "Tu pase hacia adelante guarda tensores para un pase hacia atrás que nunca llegará. "
        "¿Qué modo de autograd evita registrar nada?",
        "{n} tensors were saved for backward during the call: the forward pass was recorded."),
    "grafo_construido_y_descartado": (
        "Grafo construido y descartado",
        "La salida no tiene grafo, pero durante la llamada se guardaron {n} tensores "
        "({kib:.1f} KiB) para un pase hacia atrás que nunca llega: `detach()` al final corta "
        "el grafo después de haber pagado su memoria y su tiempo.",
        "Un `detach()` al final llega tarde: el grafo ya se construyó. ¿Qué modo de autograd "
        "evita construirlo desde el principio?",
        "{n} tensors were saved for backward during the call: the graph was built, then "
        "detached."),
    "grad_desactivado_global": (
        "Gradientes desactivados para siempre",
        "Después de tu función, el cálculo de gradientes sigue desactivado en todo el proceso: "
        "el entrenamiento que venga después no construirá ningún grafo.",
        "`torch.set_grad_enabled` como instrucción suelta cambia el estado global para todo lo "
        "que venga después. ¿Qué forma de usarlo lo restaura al salir?",
        "Grad mode was left disabled after the call (set_grad_enabled(False) without `with`)."),
    "modo_del_modelo_cambiado": (
        "Modo del modelo cambiado",
        "`{nombre}` llegó en modo {antes} y tu función lo dejó en modo {despues}: quien use "
        "el modelo después lo encontrará cambiado (Dropout y BatchNorm se portan distinto en "
        "cada modo).",
        "Cada modelo se usa en el modo en que llega: `no_grad`/`inference_mode` "
        "no dependen de `train()`/`eval()`. Si cambias el modo, cada submódulo tiene que "
        "terminar como llegó, no solo el modelo de fuera (pueden llegar en modos distintos).",
        "`{nombre}` arrived in {antes} mode and was left in {despues} mode."),
    "grad_reactivado": (
        "Cálculo de gradientes reactivado",
        "Tu función se llamó dentro de `torch.no_grad()` y, al terminar, el cálculo de "
        "gradientes quedó activado: el código de quien llama empezará a construir grafos.",
        "Volver a activar autograd al final no restaura nada: pone un valor fijo. ¿Y si quien "
        "llama lo tenía desactivado?",
        "Called inside no_grad, the function left grad mode enabled."),
    "grafo_construido": (
        "Grafo construido",
        "La salida no tiene grafo, pero durante la llamada {n} operaciones quedaron "
        "registradas en un grafo (sus resultados tienen `grad_fn`): se pagó un grafo que "
        "nadie va a recorrer.",
        "Ni un `detach()` al final ni `saved_tensors_hooks` propios evitan construir el grafo. "
        "¿Qué modo de autograd no registra nada desde el principio?",
        "{n} operations recorded a grad_fn during the call: a graph was built."),
    "log_probabilidades": (
        "Log-probabilidades en vez de probabilidades",
        "`{nombre}` es `log_softmax` de los logits: logaritmos de probabilidades (negativos), "
        "no probabilidades.",
        "Cada fila del resultado tiene que ser una distribución: números entre 0 y 1 que "
        "suman 1.",
        "`{nombre}` holds log-probabilities, not probabilities."),
    "softmax_otra_dim": (
        "Softmax sobre el eje equivocado",
        "`{nombre}` es la softmax sobre las muestras del lote (dim=0): cada columna suma 1, "
        "no cada fila.",
        "Cada fila es una muestra y cada columna una clase: ¿sobre qué dimensión normalizas?",
        "`{nombre}` is the softmax over the batch (dim=0), not over the classes."),
    "prediccion_sin_softmax": (
        "Logits en vez de probabilidades",
        "`{nombre}` contiene las salidas crudas del modelo (*logits*), no probabilidades.",
        "Lo que devuelves son logits. ¿Qué función los convierte en probabilidades por fila?",
        "`{nombre}` holds the raw logits, not probabilities."),
    "cabeza_congelada": (
        "Cabeza congelada",
        "`{nombre}` es un parámetro de la cabeza y quedó con `requires_grad=False`: no se "
        "entrenaría nada.",
        "¿Qué parámetros congelas? La cabeza (`model.head`) debe seguir entrenable.",
        "`{nombre}` belongs to the head and was frozen."),
    "encoder_sin_congelar": (
        "Nada congelado",
        "Ningún parámetro fuera de la cabeza quedó congelado (por ejemplo `{nombre}` sigue con "
        "`requires_grad=True`): se calcularán sus gradientes y el optimizador los moverá.",
        "`torch.no_grad()` no congela nada: solo afecta a las operaciones de su bloque. ¿Qué "
        "atributo de cada parámetro decide si es entrenable?",
        "No parameter outside the head was frozen (e.g. `{nombre}`)."),
    "congelado_parcial": (
        "Congelado a medias",
        "{n} de {total} parámetros fuera de la cabeza siguen entrenables, por ejemplo `{nombre}`.",
        "¿Recorres todos los parámetros que no son de la cabeza, pesos y sesgos (*bias*), en "
        "todos los submódulos?",
        "{n} of {total} parameters outside the head still require grad (e.g. `{nombre}`)."),
    "cabeza_sin_descongelar": (
        "Cabeza sin descongelar",
        "`{nombre}` es un parámetro de la cabeza que llegó congelado (`requires_grad=False`) y "
        "sigue así: congelar el resto no basta, la cabeza tiene que quedar entrenable.",
        "No supongas que la cabeza llega entrenable: ¿qué `requires_grad` tienen sus parámetros "
        "cuando devuelves?",
        "`{nombre}` belongs to the head, arrived frozen and was never unfrozen."),
    "ultimo_hijo_como_cabeza": (
        "El último submódulo no es la cabeza",
        "Dejaste entrenable `{hijo}`, el último submódulo del modelo, y congelaste `model.head`: "
        "la cabeza se reconoce por su nombre, no por su posición.",
        "La cabeza es `model.head`, no el último hijo del modelo: ¿cómo la encuentras tú?",
        "`{hijo}`, the last child module, was kept trainable instead of `model.head`."),
    "nombre_parecido_a_cabeza": (
        "Nombre parecido a «head»",
        "`{nombre}` no es de `model.head`, aunque su nombre contenga «head», y quedó entrenable.",
        "¿Cómo decides que un parámetro es de la cabeza? Un nombre que solo se parece "
        "(`heads_aux`, `encoder.head_proj`) no lo es.",
        "`{nombre}` is not under `model.head` but its name contains 'head'; it stayed trainable."),
    "parametro_del_modelo_sin_congelar": (
        "Parámetro del propio modelo sin congelar",
        "`{nombre}` está registrado directamente en el modelo, no en ninguno de sus "
        "submódulos, y quedó entrenable: recorrer los hijos (`named_children()`) no lo ve.",
        "¿Recorres los hijos o los parámetros? Un modelo puede registrar parámetros propios, "
        "fuera de cualquier hijo.",
        "`{nombre}`, registered on the model itself, stayed trainable."),
    "modo_cambiado": (
        "Modo train/eval cambiado",
        "`{nombre}` llegó en modo evaluación y tu función lo dejó en modo entrenamiento: "
        "entrenable (`requires_grad`) no es lo mismo que modo `train()`.",
        "Congelar y descongelar solo tocan `requires_grad`: no llames a `train()` ni a "
        "`eval()`, cada módulo debe quedar en el modo en que llegó.",
        "`{nombre}` arrived in eval mode and was left in train mode."),
    "grad_borrado": (
        "`.grad` borrado",
        "`{nombre}` llegó con un `.grad` de antes y tu función lo cambió (o lo dejó en "
        "`None`): congelar solo toca `requires_grad`, y ese gradiente es de quien llama.",
        "¿Qué haces con el `.grad` de los parámetros que congelas? El enunciado pide cambiar "
        "solo `requires_grad`.",
        "`{nombre}` arrived with a stale .grad and the call changed or cleared it."),
    "nombres_entrenables": (
        "Nombres devueltos",
        "Devolviste {obtenidos}; se esperaban los nombres de los parámetros que siguen "
        "entrenables: {esperados}.",
        "Devuelve los nombres de los parámetros que siguen con `requires_grad=True` (los "
        "entrenables, no los congelados), completos como los da `model.named_parameters()`: "
        "`head.weight`, no `weight` ni `head`.",
        "Returned {obtenidos}; expected the trainable parameter names {esperados}."),
}
registrar(MENSAJES)


def _normal(generador, *forma, escala=1.0):
    return torch.randn(*forma, generator=generador, dtype=torch.float64) * escala


def _pesos_aleatorios(modelo, generador):
    """float64 copy of ``modelo`` with N(0, 0.5²) weights from ``generador``."""
    modelo = modelo.to(torch.float64)
    with torch.no_grad():
        for p in modelo.parameters():
            p.copy_(_normal(generador, *p.shape, escala=0.5))
    return modelo


def _tipo(nombre, objeto, esperado):
    fallar("tipo", nombre=nombre, esperado=esperado,
           tipo=objeto.get("__objeto__", "dict") if isinstance(objeto, dict) else
           type(objeto).__name__)


def _comparar_con_alternativas(nombre, obtenido, esperado, alternativas, factores=None):
    """Like ``comparar``, but a result equal to an alternative gets that alternative's id.

    ``alternativas`` maps a description to (tensor, diagnosis id).
    """
    diagnostico = diagnosticar_tensor(nombre, obtenido, esperado, factores)
    if diagnostico is not None and isinstance(obtenido, torch.Tensor):
        for descripcion, (otro, identificador) in alternativas.items():
            if otro is not None and otro.shape == obtenido.shape and cerca(obtenido, otro):
                fallar(identificador, nombre=nombre, otro=descripcion)
    exigir(diagnostico)


# ---------------------------------------------------------------- shared helpers
def _opciones(forma, n):
    """The shape's first ``n`` numbers, and the set of flags that follow them."""
    return tuple(forma[:n]), set(forma[n:])


def _dtype(opciones):
    return torch.float32 if "float32" in opciones else torch.float64


def _grad_viejo(modelo, generador):
    """A stale ``.grad`` on every parameter, as an earlier backward would leave it."""
    for p in modelo.parameters():
        p.grad = _normal(generador, *p.shape).to(p.dtype)


def _sin_suprimir(nombre, resultado, esperado):
    """A result that lost a size-1 dimension of the expected shape (``squeeze()``)."""
    if (isinstance(resultado, torch.Tensor) and resultado.dim() < esperado.dim()
            and resultado.numel() == esperado.numel() and 1 in esperado.shape):
        fallar("dimension_suprimida", nombre=nombre, forma=tuple(resultado.shape),
               forma_esperada=tuple(esperado.shape))


def _efectos(caso, permitidos=(), propios=None):
    """What the call changed that it should not have: the first change, named by a
    specific diagnosis where one fits (``propios``: name -> (before, after) -> id or None),
    otherwise the generic one."""
    antes, despues = caso.datos["estado_antes"], caso.datos["estado_despues"]
    distintos = cambios(antes, despues, permitidos)
    for nombre in distintos:
        if propios is not None:
            propio = propios(nombre, antes.get(nombre), despues.get(nombre))
            if propio is not None:
                fallar(propio[0], **propio[1])
    verificar_sin_efectos(caso, permitidos)




# ---------------------------------------------------------------- exercise 1: distillation_loss
def construir_destilacion(generador, forma):
    """student and teacher (Linear–Tanh–Linear, the teacher wider), a batch x (N, D) and
    the temperature, for ``forma`` = (N, D, K, T, *flags).

    Flags: "float32" (models and x in float32; float64 otherwise), "profesor_eval" (the
    teacher arrives in eval mode; in train mode otherwise), "alumno_eval" (the student
    arrives in eval mode), "profesor_congelado" (every teacher parameter arrives frozen,
    like the chapter's EMA teacher), "profesor_parcial" (every other teacher parameter
    arrives frozen, the first one included), "grad_viejo" (stale ``.grad`` on every
    parameter of both models), "profesor_anidado" (the teacher is
    Sequential(Sequential(Linear, Tanh), Linear)), "profesor_mixto" (one of the teacher's
    submodules, the deepest Tanh, arrives in the other mode than the teacher itself),
    "alumno_mixto" (the student's Tanh arrives in the other mode than the student).
    """
    (N, D, K, temperatura), opciones = _opciones(forma, 4)
    H_alumno = int(torch.randint(2, 6, (1,), generator=generador))
    H_profesor = H_alumno + int(torch.randint(1, 5, (1,), generator=generador))
    alumno = _pesos_aleatorios(torch.nn.Sequential(
        torch.nn.Linear(D, H_alumno), torch.nn.Tanh(), torch.nn.Linear(H_alumno, K)), generador)
    if "profesor_anidado" in opciones:
        profesor = torch.nn.Sequential(
            torch.nn.Sequential(torch.nn.Linear(D, H_profesor), torch.nn.Tanh()),
            torch.nn.Linear(H_profesor, K))
    else:
        profesor = torch.nn.Sequential(torch.nn.Linear(D, H_profesor), torch.nn.Tanh(),
                                       torch.nn.Linear(H_profesor, K))
    profesor = _pesos_aleatorios(profesor, generador)
    x = _normal(generador, N, D)
    if "grad_viejo" in opciones:
        _grad_viejo(alumno, generador)
        _grad_viejo(profesor, generador)
    if "profesor_congelado" in opciones:
        profesor.requires_grad_(False)
    if "profesor_parcial" in opciones:
        for i, p in enumerate(profesor.parameters()):
            p.requires_grad_(i % 2 == 1)
    profesor.train("profesor_eval" not in opciones)
    if "profesor_mixto" in opciones:
        profundo = profesor[0][1] if "profesor_anidado" in opciones else profesor[1]
        profundo.train(not profesor.training)
    alumno.train("alumno_eval" not in opciones)
    if "alumno_mixto" in opciones:
        alumno[1].train(not alumno.training)
    dtype = _dtype(opciones)
    alumno.to(dtype)
    profesor.to(dtype)
    return {"student": alumno, "teacher": profesor, "x": x.to(dtype),
            "temperature": float(temperatura)}


_INFERENCIA = "Inference tensors cannot be saved for backward"


def _error_de_inferencia(datos):
    """An error (plain data) that is autograd refusing to save an inference tensor gets
    its own diagnosis; any other stays as it is."""
    if datos is not None and _INFERENCIA in str(datos["hechos"].get("detalle", "")):
        return error_a_datos(ComprobacionFallida(Diagnostico(
            "tensor_de_inferencia_guardado", {"detalle": datos["hechos"]["detalle"]})))
    return datos


def observar_destilacion(distillation_loss, entradas):
    """The loss, then what the caller's ``backward()`` on it does.

    Everything the call changed is read before that backward (the call itself may write
    nothing). Then, on the trusted side, every ``.grad`` of both models is cleared and
    ``loss.backward()`` runs: the student's gradients, and the names of the teacher's
    parameters that received one, are what the parts compare.
    """
    alumno, profesor = entradas["student"], entradas["teacher"]
    propios = {"student": alumno, "teacher": profesor, "x": entradas["x"]}
    perdida = None

    def guardar(*args):
        nonlocal perdida
        perdida = distillation_loss(*args)
        return perdida

    modo_previo = torch.is_grad_enabled()
    try:
        antes = estado(propios)
        observacion = observar_llamada(guardar, alumno, profesor, entradas["x"],
                                       entradas["temperature"])
        despues = estado(propios)
    finally:
        torch.set_grad_enabled(modo_previo)
    observacion["error"] = _error_de_inferencia(observacion["error"])
    con_grafo = isinstance(perdida, torch.Tensor) and perdida.grad_fn is not None
    error_backward, grads_alumno, grads_profesor = None, {}, []
    if observacion["error"] is None and con_grafo:
        for p in (*alumno.parameters(), *profesor.parameters()):
            p.grad = None
        try:
            llamar(perdida.backward)
        except ComprobacionFallida as error:
            error_backward = _error_de_inferencia(error_a_datos(error))
        grads_alumno = {n: None if p.grad is None else p.grad.detach().clone()
                        for n, p in alumno.named_parameters()}
        grads_profesor = [n for n, p in profesor.named_parameters() if p.grad is not None]
    observacion.update(perdida_con_grafo=con_grafo, error_backward=error_backward,
                       grads_alumno=grads_alumno, grads_profesor=grads_profesor,
                       estado_antes=antes, estado_despues=despues)
    return observacion


def contexto_destilacion(forma):
    """The constant factor each wrong reduction or scale of the loss introduces."""
    N, K, temperatura = forma[0], forma[2], float(forma[3])
    # With one sample, 1/K is a batch dimension squeezed away (batchmean then divides by K):
    # a mean over the N·K entries already fails the cases with N > 1, which come first.
    factores = {"lote_suprimido" if N == 1 else "kl_media_por_elemento": 1 / K,
                "kl_suma_del_lote": N}
    if temperatura != 1:
        factores["sin_temperatura_al_cuadrado"] = 1 / temperatura**2
        factores["temperatura_sin_cuadrado"] = 1 / temperatura
    return {"factores": factores}


def _valor_perdida(caso):
    esperado = caso.datos["esperado"]
    resultado = caso.resultado
    if not isinstance(resultado, torch.Tensor):
        _tipo("la pérdida", resultado, "un tensor escalar (sin `.item()`: tiene que poder "
              "derivarse)")
    if resultado.shape != ():
        fallar("perdida_no_escalar", forma=tuple(resultado.shape))
    _comparar_con_alternativas(
        "la pérdida", resultado, esperado["loss"],
        {"probabilidades": (esperado.get("kl_sin_log"), "kl_con_probabilidades"),
         "temperatura": (esperado.get("temperatura_solo_alumno"), "temperatura_solo_alumno"),
         "invertida": (esperado.get("kl_invertida"), "kl_invertida")},
        caso.datos["factores"])


def _backward_posible(caso):
    """The caller's ``loss.backward()`` must run: a graph, and nothing it cannot save."""
    if not caso.datos["perdida_con_grafo"]:
        fallar("perdida_sin_grafo")
    if caso.datos["error_backward"] is not None:
        raise datos_a_error(caso.datos["error_backward"])


def _gradientes_del_alumno(caso):
    _backward_posible(caso)
    obtenidos, esperados = caso.datos["grads_alumno"], caso.datos["esperado"]["grads"]
    for nombre, esperado in esperados.items():
        obtenido = obtenidos.get(nombre)
        if obtenido is None:
            fallar("alumno_sin_gradiente", nombre=f"student.{nombre}")
        exigir(diagnosticar_tensor(f"student.{nombre}.grad", obtenido, esperado,
                                   caso.datos["factores"]))


def _profesor_sin_gradiente(caso):
    _backward_posible(caso)
    if caso.datos["grads_profesor"]:
        fallar("gradiente_al_profesor", nombre=f"teacher.{caso.datos['grads_profesor'][0]}")


def _efecto_destilacion(nombre, antes, despues):
    if nombre.startswith("teacher.") and nombre.endswith(".requires_grad") and antes:
        return ("profesor_congelado", {"nombre": nombre.removesuffix(".requires_grad")})
    if nombre.endswith(".grad") and nombre.startswith(("student.", "teacher.")):
        return ("backward_dentro", {"nombre": nombre})
    return _efecto_propio(nombre, antes, despues)


def _sin_efectos_destilacion(caso):
    _efectos(caso, (), _efecto_destilacion)


DISTILLATION_LOSS = Ejercicio(
    funcion="distillation_loss",
    partes=[
        Parte("el valor de la pérdida de destilación", 1.0, _valor_perdida),
        Parte("loss.backward() funciona y da el gradiente del alumno", 1.0,
              _gradientes_del_alumno),
        Parte("ningún gradiente llega a los parámetros del profesor", 0.5,
              _profesor_sin_gradiente),
        Parte("sin efectos: los dos modelos y x como llegaron (valores, requires_grad, .grad, "
              "modo de cada submódulo), modo de autograd restaurado", 0.5,
              _sin_efectos_destilacion, requisito=True),
    ],
    construir=construir_destilacion, observar=observar_destilacion,
    contexto=contexto_destilacion)


def destilacion_a_mano(student, teacher, x, temperature):
    """The public oracle: both softmaxes written out, the KL as a sum, the student's
    gradients by autograd through that formula (not the reference)."""
    with torch.no_grad():
        z = teacher(x) / temperature
        e = torch.exp(z - z.max(dim=1, keepdim=True).values)
        p = e / e.sum(dim=1, keepdim=True)
    s = student(x) / temperature
    s = s - s.max(dim=1, keepdim=True).values
    log_q = s - torch.log(torch.exp(s).sum(dim=1, keepdim=True))
    perdida = temperature**2 * (p * (torch.log(p) - log_q)).sum() / x.shape[0]
    nombres, parametros = zip(*student.named_parameters())
    grads = torch.autograd.grad(perdida, parametros)
    return {"loss": perdida.detach(), "grads": dict(zip(nombres, grads))}


def comprobar_distillation_loss(distillation_loss):
    """Comprobación pública: el valor de la pérdida frente a una fórmula escrita a mano, un
    ``backward()`` sobre ella que llega al alumno y no al profesor; después, un profesor
    congelado en modo evaluación con un submódulo en entrenamiento, float32 y un lote de
    una muestra; por último, un profesor anidado y congelado en parte, en modo
    entrenamiento con un submódulo en evaluación, y T = 1."""
    caso = caso_en_proceso(DISTILLATION_LOSS, distillation_loss, 8, (6, 3, 3, 2.0),
                           destilacion_a_mano)
    comprobar(DISTILLATION_LOSS.partes, caso,
              "La pérdida coincide, `backward()` funciona y solo el alumno recibe gradiente.")
    caso = caso_en_proceso(DISTILLATION_LOSS, distillation_loss, 9,
                           (1, 4, 2, 0.5, "float32", "profesor_eval", "profesor_congelado",
                            "profesor_mixto", "grad_viejo"), destilacion_a_mano)
    comprobar(DISTILLATION_LOSS.partes, caso,
              "También con un profesor congelado y en modo evaluación (con un submódulo en "
              "entrenamiento), en float32, con un lote de una sola muestra y `.grad` de "
              "antes: todo queda como llegó.")
    caso = caso_en_proceso(DISTILLATION_LOSS, distillation_loss, 10,
                           (4, 2, 3, 1.0, "profesor_parcial", "profesor_anidado",
                            "profesor_mixto", "alumno_eval"), destilacion_a_mano)
    comprobar(DISTILLATION_LOSS.partes, caso,
              "También con T = 1 y un profesor anidado, con una parte de sus parámetros "
              "congelada y un submódulo profundo en otro modo que él: cada parámetro y cada "
              "submódulo quedan como llegaron.")


# ---------------------------------------------------------------- exercise 2: predict
def construir_prediccion(generador, forma):
    """model (Linear–ReLU–Linear), a batch x (N, D) and how the call is made, for
    ``forma`` = (N, D, H, K, *flags).

    Flags: "float32" (model and x in float32; float64 otherwise), "anidado" (the model is
    Sequential(Sequential(Linear, ReLU), Linear without bias)), "eval" (the model arrives
    in eval mode), "mixto" (one submodule arrives in the other mode than the model: the
    first layer, inside its own Sequential when the model is nested), "congelado"
    (every other parameter arrives frozen), "grad_viejo" (stale ``.grad`` on every
    parameter), "x_grad" (x requires grad), "sin_grad" (the caller is inside
    ``torch.no_grad()``).
    """
    (N, D, H, K), opciones = _opciones(forma, 4)
    if "anidado" in opciones:
        modelo = torch.nn.Sequential(
            torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.ReLU()),
            torch.nn.Linear(H, K, bias=False))
    else:
        modelo = torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.ReLU(),
                                     torch.nn.Linear(H, K))
    modelo = _pesos_aleatorios(modelo, generador)
    x = _normal(generador, N, D)
    if "grad_viejo" in opciones:
        _grad_viejo(modelo, generador)
    if "congelado" in opciones:
        for i, p in enumerate(modelo.parameters()):
            p.requires_grad_(i % 2 == 1)
    if "eval" in opciones:
        modelo.eval()
    if "mixto" in opciones:
        profundo = modelo[0][0] if "anidado" in opciones else modelo[0]
        profundo.train(not modelo.training)
    dtype = _dtype(opciones)
    modelo.to(dtype)
    x = x.to(dtype).requires_grad_("x_grad" in opciones)
    return {"model": modelo, "x": x, "llamada": {"sin_grad": "sin_grad" in opciones}}


def _tensores_en(*objetos):
    for objeto in objetos:
        if isinstance(objeto, torch.Tensor):
            yield objeto
        elif isinstance(objeto, (list, tuple)):
            yield from (v for v in objeto if isinstance(v, torch.Tensor))
        elif isinstance(objeto, dict):
            yield from (v for v in objeto.values() if isinstance(v, torch.Tensor))


class _RegistroDeGrafo(torch.overrides.TorchFunctionMode):
    """Active during the call: counts the results that carry a ``grad_fn`` (a graph was
    recorded, whatever ``saved_tensors_hooks`` the call installs) and whether any
    computation read one of the model's parameters."""

    def __init__(self, parametros):
        super().__init__()
        self.parametros, self.nodos, self.uso_parametros = parametros, 0, False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        nombre = getattr(func, "__name__", "")
        if not nombre.startswith("__") and not nombre.endswith("_") and any(
                id(t) in self.parametros for t in _tensores_en(*args, kwargs)):
            self.uso_parametros = True
        salida = func(*args, **kwargs)
        self.nodos += sum(t.grad_fn is not None for t in _tensores_en(salida))
        return salida


def observar_prediccion(predict, entradas):
    """The result, whether it carries a graph, what was recorded or saved for backward
    during the call, and everything the call changed.

    The call runs in the caller's grad mode (``llamada``: inside ``no_grad`` or not),
    under a ``saved_tensors_hooks`` that counts every tensor autograd stores for a
    backward pass and a function mode that sees every result with a ``grad_fn``.
    """
    modelo, x = entradas["model"], entradas["x"]
    propios = {"model": modelo, "x": x}
    guardados, pasadas = [], []

    def empaquetar(tensor):
        guardados.append(tensor.numel() * tensor.element_size())
        return tensor

    salida = None

    def guardar(*args):
        nonlocal salida
        salida = predict(*args)
        return salida

    registro = _RegistroDeGrafo({id(p) for p in modelo.parameters()})
    ganchos = [m.register_forward_hook(lambda *_: pasadas.append(1)) for m in modelo.modules()]
    modo_previo = torch.is_grad_enabled()
    torch.set_grad_enabled(not entradas["llamada"]["sin_grad"])
    try:
        antes = estado(propios)
        with torch.autograd.graph.saved_tensors_hooks(empaquetar, lambda tensor: tensor):
            with registro:
                observacion = observar_llamada(guardar, modelo, x)
        despues = estado(propios)
    finally:
        torch.set_grad_enabled(modo_previo)
        for gancho in ganchos:
            gancho.remove()
    es_tensor = isinstance(salida, torch.Tensor)
    observacion.update(
        uso_el_modelo=bool(pasadas) or registro.uso_parametros,
        salida_constante=es_tensor and salida.is_floating_point() and salida.numel() > 1
        and _constante(salida.detach()),
        salida_con_grafo=es_tensor and (salida.requires_grad or salida.grad_fn is not None),
        n_guardados=len(guardados), bytes_guardados=sum(guardados), nodos=registro.nodos,
        estado_antes=antes, estado_despues=despues)
    return observacion


def _constante(tensor):
    return tensor.numel() > 0 and bool(tensor.eq(tensor.flatten()[0]).all())


def _probabilidades(caso):
    esperado = caso.datos["esperado"]
    _sin_suprimir("la predicción", caso.resultado, esperado["probs"])
    _comparar_con_alternativas(
        "la predicción", caso.resultado, esperado["probs"],
        {"softmax(dim=0)": (esperado["dim0"], "softmax_otra_dim"),
         "los logits": (esperado["logits"], "prediccion_sin_softmax"),
         "log_softmax": (esperado["log_probs"], "log_probabilidades")})


def _salida_del_modelo(caso):
    """The no-graph parts are about a real prediction: a constant, or a tensor made without
    the model, builds no graph by doing nothing, and earns nothing for it. (A constant is
    what the model gives when K == 1, or softmax over a batch of one: then it counts.)"""
    if not caso.datos["uso_el_modelo"]:
        fallar("salida_sin_modelo", que="un tensor calculado sin usar el modelo")
    if caso.datos["salida_constante"] and not any(
            _constante(t) for t in caso.datos["esperado"].values()):
        fallar("salida_sin_modelo", que="el mismo valor en todas las posiciones")


def _salida_sin_grafo(caso):
    _salida_del_modelo(caso)
    if caso.datos["salida_con_grafo"]:
        fallar("prediccion_con_grafo")


def _nada_guardado(caso):
    _salida_del_modelo(caso)
    if caso.datos["n_guardados"] > 0:
        fallar("tensores_guardados" if caso.datos["salida_con_grafo"] else
               "grafo_construido_y_descartado", n=caso.datos["n_guardados"],
               kib=caso.datos["bytes_guardados"] / 1024)
    if caso.datos["nodos"] > 0:
        fallar("grafo_construido", n=caso.datos["nodos"])


def _modo(entrenando):
    return "entrenamiento" if entrenando else "evaluación"


def _efecto_propio(nombre, antes, despues):
    """The specific diagnosis of one change a call should not make (None: the generic)."""
    if nombre == "modo de autograd":
        return ("grad_desactivado_global", {}) if antes else ("grad_reactivado", {})
    if nombre.endswith(".training"):
        modulo = nombre[:-len(".training")]
        if antes is not None and despues is not None:
            return ("modo_del_modelo_cambiado", {"nombre": modulo, "antes": _modo(antes),
                                                 "despues": _modo(despues)})
    if nombre.endswith(".grad") and antes is None:
        return ("grad_poblado", {})
    if nombre.endswith(".requires_grad") or isinstance(antes, torch.Tensor):
        return ("modificada", {"nombre": nombre.removesuffix(".requires_grad")})
    return None


def _sin_efectos_prediccion(caso):
    _efectos(caso, (), _efecto_propio)


PREDICT = Ejercicio(
    funcion="predict",
    partes=[
        Parte("probabilidades (softmax sobre las clases)", 1.0, _probabilidades),
        Parte("la salida no tiene grafo (sin grad_fn, requires_grad=False)", 0.5,
              _salida_sin_grafo),
        Parte("no se registra ni se guarda nada para backward durante la llamada", 1.0,
              _nada_guardado),
        Parte("sin efectos: modelo y x como llegaron (valores, requires_grad, .grad, modo de "
              "cada submódulo), modo de autograd de quien llama restaurado", 0.5,
              _sin_efectos_prediccion, requisito=True),
    ],
    construir=construir_prediccion, observar=observar_prediccion)


def probabilidades_a_mano(model, x, llamada=None):
    """The public oracle: exp and normalise, written out (and the usual wrong answers)."""
    with torch.no_grad():
        logits = model(x)
        e_filas = torch.exp(logits - logits.max(dim=1, keepdim=True).values)
        e_columnas = torch.exp(logits - logits.max(dim=0, keepdim=True).values)
        suma_filas = e_filas.sum(dim=1, keepdim=True)
        return {"probs": e_filas / suma_filas,
                "dim0": e_columnas / e_columnas.sum(dim=0, keepdim=True), "logits": logits,
                "log_probs": logits - logits.max(dim=1, keepdim=True).values
                - torch.log(suma_filas)}


def comprobar_predict(predict):
    """Comprobación pública: probabilidades, sin grafo en la salida y nada guardado para el pase
    hacia atrás; después, una llamada dentro de ``torch.no_grad()`` con un modelo en modo
    evaluación, un submódulo profundo en otro modo, parámetros congelados, ``.grad`` de
    antes, ``x`` que requiere gradiente y un lote de una muestra; por último, un modelo en
    modo entrenamiento con un submódulo en evaluación, en float32 y con una sola clase."""
    caso = caso_en_proceso(PREDICT, predict, 5, (5, 4, 6, 3), probabilidades_a_mano)
    comprobar(PREDICT.partes, caso,
              "Probabilidades correctas y ni un solo tensor guardado para backward.")
    caso = caso_en_proceso(PREDICT, predict, 6, (1, 4, 6, 3, "anidado", "eval", "mixto",
                                                 "congelado", "sin_grad", "grad_viejo",
                                                 "x_grad"),
                           probabilidades_a_mano)
    comprobar(PREDICT.partes, caso,
              "También llamada dentro de `torch.no_grad()`, con el modelo en modo evaluación "
              "(y un submódulo en otro modo), parámetros congelados, `.grad` de antes, un `x` "
              "que requiere gradiente y un lote de una muestra: todo queda como llegó.")
    caso = caso_en_proceso(PREDICT, predict, 7, (4, 3, 5, 1, "anidado", "mixto", "float32",
                                                 "x_grad"), probabilidades_a_mano)
    comprobar(PREDICT.partes, caso,
              "También con el modelo en modo entrenamiento y un submódulo en evaluación, en "
              "float32 y con una sola clase: cada submódulo queda en su modo.")


# ---------------------------------------------------------------- exercise 3: freeze_all_but_head
def _cabeza(tipo, H, K):
    if tipo == "lineal":
        return torch.nn.Linear(H, K)
    if tipo == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(H, H), torch.nn.ReLU(), torch.nn.Linear(H, K))
    return torch.nn.Sequential(torch.nn.LayerNorm(H), torch.nn.Linear(H, K, bias=False))


def construir_congelar(generador, forma):
    """embed → encoder (``capas`` blocks) → head, for ``forma`` = (D, H, capas, K, cabeza,
    *flags), ``cabeza`` one of "lineal", "mlp", "norma".

    Flags: "trampas" (what a shortcut gets wrong: a head that arrives frozen and in eval
    mode, an ``encoder.head_proj``, an ``encoder.head`` and a ``pool`` that are not the
    head, and a ``heads_aux`` registered after the head, so that the head is not the last
    child), "profundo" (each encoder block is its own Sequential(Linear, ReLU)),
    "cabeza_parcial" (only the head's first parameter arrives frozen), "embed_congelado"
    (``embed`` arrives frozen already), "directo" (a
    parameter ``escala`` registered on the model itself, in no submodule), "grad_viejo"
    (a stale ``.grad`` on every parameter).
    """
    D, H, capas, K, cabeza, *extra = forma
    trampas = "trampas" in extra
    bloques = []
    for _ in range(capas):
        bloque = [torch.nn.Linear(H, H), torch.nn.ReLU()]
        bloques += [torch.nn.Sequential(*bloque)] if "profundo" in extra else bloque
    encoder = torch.nn.Sequential(*bloques)
    partes = OrderedDict(embed=torch.nn.Linear(D, H), encoder=encoder)
    if trampas:
        encoder.add_module("head_proj", torch.nn.Linear(H, H))
        encoder.add_module("head", torch.nn.Linear(H, H))
        partes["pool"] = torch.nn.LayerNorm(H)
    partes["head"] = _cabeza(cabeza, H, K)
    if trampas:
        partes["heads_aux"] = torch.nn.Linear(H, K)
    modelo = torch.nn.Sequential(partes)
    if "directo" in extra:
        modelo.register_parameter("escala", torch.nn.Parameter(torch.ones(H)))
    modelo = _pesos_aleatorios(modelo, generador)
    if "grad_viejo" in extra:
        _grad_viejo(modelo, generador)
    if trampas:
        modelo.head.requires_grad_(False)
        modelo.head.eval()
    if "cabeza_parcial" in extra:
        next(modelo.head.parameters()).requires_grad_(False)
    if "embed_congelado" in extra:
        modelo.embed.requires_grad_(False)
    return {"model": modelo}


def contexto_congelar(forma):
    """What the model looks like on arrival (built here, on the trusted side)."""
    modelo = construir_congelar(torch.Generator().manual_seed(0), forma)["model"]
    return {"congeladas_antes": [n for n, p in modelo.named_parameters() if not p.requires_grad],
            "en_eval_antes": [n or "model" for n, m in modelo.named_modules() if not m.training]}


def _como_lista(resultado):
    """A set of names is as good as a list (the order is free): read it as a sorted list."""
    if type(resultado) in (set, frozenset) and all(type(n) is str for n in resultado):
        return sorted(resultado)
    return resultado


def observar_congelar(freeze_all_but_head, entradas):
    """The result, then which parameters require grad, every module's mode, everything
    else the call changed."""
    modelo = entradas["model"]
    antes = estado(entradas)
    observacion = observar_llamada(lambda m: _como_lista(freeze_all_but_head(m)), modelo)
    observacion["requires_grad"] = {n: p.requires_grad for n, p in modelo.named_parameters()}
    observacion["en_eval"] = [n or "model" for n, m in modelo.named_modules() if not m.training]
    observacion.update(estado_antes=antes, estado_despues=estado(entradas))
    return observacion


def _parecido_a_cabeza(nombre):
    return "head" in nombre and nombre.split(".")[0] != "head"


def _solo_la_cabeza(caso):
    entrenables = set(caso.datos["esperado"])
    estado_final = caso.datos["requires_grad"]
    congeladas = sorted(n for n in entrenables if not estado_final.get(n, False))
    resto = [n for n in estado_final if n not in entrenables]
    sueltos = [n for n in resto if estado_final[n]]
    ultimo = list(estado_final)[-1].split(".")[0] if estado_final else "head"
    de_hijos = [n for n in sueltos if "." in n]  # not the model's own parameters
    if congeladas and de_hijos and ultimo != "head" and all(
            n.split(".")[0] == ultimo for n in de_hijos):
        fallar("ultimo_hijo_como_cabeza", hijo=ultimo)
    if sueltos and len(sueltos) == len(resto):
        fallar("encoder_sin_congelar", nombre=sueltos[0])
    if sueltos and all("." not in n for n in sueltos):
        fallar("parametro_del_modelo_sin_congelar", nombre=sueltos[0])
    if sueltos and all(_parecido_a_cabeza(n) for n in sueltos):
        fallar("nombre_parecido_a_cabeza", nombre=sueltos[0])
    if sueltos:
        fallar("congelado_parcial", nombre=sueltos[0], n=len(sueltos), total=len(resto))
    if congeladas and set(congeladas) <= set(caso.datos.get("congeladas_antes", ())):
        fallar("cabeza_sin_descongelar", nombre=congeladas[0])
    if congeladas:
        fallar("cabeza_congelada", nombre=congeladas[0])


def _nombres_devueltos(caso):
    resultado, esperados = caso.resultado, list(caso.datos["esperado"])
    if type(resultado) not in (list, tuple) or not all(type(n) is str for n in resultado):
        _tipo("el resultado", resultado, "una lista (o tupla o conjunto) de nombres (str)")
    if sorted(resultado) != sorted(esperados):
        fallar("nombres_entrenables", obtenidos=list(resultado)[:6], esperados=esperados)


def _efecto_congelar(nombre, antes, despues):
    if nombre.endswith(".training"):
        modulo = nombre[:-len(".training")]
        return ("modo_cambiado", {"nombre": modulo}) if antes is False else ("modelo_en_eval", {})
    if nombre.endswith(".grad") and antes is not None:
        return ("grad_borrado", {"nombre": nombre.removesuffix(".grad")})
    if isinstance(antes, torch.Tensor) and not nombre.endswith(".grad"):
        return ("modificada", {"nombre": nombre})
    return None


def _modelo_intacto(caso):
    _efectos(caso, [n for n in caso.datos["estado_antes"] if n.endswith(".requires_grad")],
             _efecto_congelar)


FREEZE_ALL_BUT_HEAD = Ejercicio(
    funcion="freeze_all_but_head",
    partes=[
        Parte("solo la cabeza queda entrenable (requires_grad)", 1.0, _solo_la_cabeza),
        Parte("nombres de los parámetros entrenables", 0.5, _nombres_devueltos),
        Parte("valores, .grad, modo train/eval y modo de autograd intactos", 0.5,
              _modelo_intacto, requisito=True),
    ],
    construir=construir_congelar, observar=observar_congelar,
    contexto=contexto_congelar)


def nombres_de_la_cabeza(model):
    """The public oracle: every parameter whose name lives under ``head``."""
    return [n for n, _ in model.named_parameters() if n.split(".")[0] == "head"]


def comprobar_freeze_all_but_head(freeze_all_but_head):
    """Comprobación pública: solo la cabeza entrenable, los nombres correctos y nada más tocado;
    en un modelo plano; después, en uno más profundo cuya cabeza llega congelada, con
    módulos de nombre parecido (uno anidado se llama ``head``), un parámetro propio y
    ``.grad`` de antes; por último, con la cabeza y el ``embed`` congelados en parte."""
    caso = caso_en_proceso(FREEZE_ALL_BUT_HEAD, freeze_all_but_head, 6, (4, 6, 2, 3, "lineal"),
                           nombres_de_la_cabeza)
    comprobar(FREEZE_ALL_BUT_HEAD.partes, caso,
              "Solo la cabeza sigue entrenable y devolviste sus nombres.")
    caso = caso_en_proceso(FREEZE_ALL_BUT_HEAD, freeze_all_but_head, 7,
                           (4, 6, 2, 3, "mlp", "trampas", "profundo", "directo", "grad_viejo"),
                           nombres_de_la_cabeza)
    comprobar(FREEZE_ALL_BUT_HEAD.partes, caso,
              "También cuando la cabeza llega congelada (y en modo eval), otros módulos se "
              "llaman parecido (`heads_aux`, `encoder.head_proj`, `encoder.head`), el modelo "
              "tiene un parámetro propio (`escala`) y los parámetros traen `.grad` de antes.")
    caso = caso_en_proceso(FREEZE_ALL_BUT_HEAD, freeze_all_but_head, 8,
                           (3, 5, 1, 2, "norma", "cabeza_parcial", "embed_congelado"),
                           nombres_de_la_cabeza)
    comprobar(FREEZE_ALL_BUT_HEAD.partes, caso,
              "También cuando la cabeza llega congelada en parte y el `embed` ya congelado.")


# In notebook order.
EJERCICIOS = ejercicios(DISTILLATION_LOSS, PREDICT, FREEZE_ALL_BUT_HEAD)
