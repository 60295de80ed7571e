"""The catalogue of misconceptions: one entry per diagnosis id, Spanish and English.

The one source of every message a student sees, in the notebook (public checks)
and in the graded feedback (hidden tests). Injected into student notebooks by the
build, so: standard library only. Placeholders are filled from the diagnosis facts.

A hint (``pista``) says what is wrong and where to look, often as a question; it never
hands over the fix (no code to paste: ``tests/chapters/test_hints.py`` enforces the
rule). How to fix each mistake lives in ``autograder/hidden/fixes.py`` and the
chapters' ``fixes.py``, which are never injected: the feedback shows it after grading.
"""

# id -> (title, Spanish explanation, Spanish hint, English explanation)
CATALOGO = {
    # --- values --------------------------------------------------------------------------
    "no_reconocido": (
        "Valor incorrecto",
        "`{nombre}` no coincide con el valor de referencia y no reconozco un error frecuente.",
        "Compara tu cálculo paso a paso con la fórmula; prueba con entradas pequeñas a mano.",
        "`{nombre}` does not match the reference and no known mistake explains it."),
    "signo": (
        "Signo invertido",
        "`{nombre}` es −1 × el valor correcto.",
        "Revisa la derivada de la pérdida respecto de la predicción: ¿restas en el orden "
        "correcto?",
        "`{nombre}` is −1 × the expected value: a sign error."),
    "factor_2": (
        "Factor 2",
        "`{nombre}` es {razon:.3g} × el valor correcto.",
        "Busca un 2 de más o de menos: la derivada de un cuadrado, una media sobre el doble "
        "(o la mitad) de elementos, algo sumado dos veces.",
        "`{nombre}` is off by a factor of 2 (a square's derivative, a mean over the wrong "
        "count, something added twice)."),
    "suma_en_vez_de_media": (
        "Suma en vez de media",
        "`{nombre}` es {razon:.3g} × el valor correcto, y {razon:.3g} es el número de elementos "
        "que promedia la pérdida.",
        "La pérdida es una media: su derivada lleva un 1/n. ¿Sumaste sin dividir?",
        "`{nombre}` is n times too large: a sum where the loss is a mean."),
    "media_en_vez_de_suma": (
        "Media en vez de suma",
        "`{nombre}` es 1/{inversa:.3g} del valor correcto.",
        "Dividiste por el número de elementos una vez de más.",
        "`{nombre}` is n times too small: divided once too often."),
    "media_solo_sobre_lote": (
        "Media solo sobre el lote",
        "`{nombre}` es {razon:.3g} × el valor correcto: K = {razon:.3g} es el número de salidas.",
        "`mse_loss` promedia sobre los N·K elementos de ŷ, no solo sobre las N filas del lote.",
        "`{nombre}` is K times too large: averaged over the batch only, not over all outputs."),
    "media_solo_sobre_salidas": (
        "Media solo sobre las salidas",
        "`{nombre}` es {razon:.3g} × el valor correcto: N = {razon:.3g} es el tamaño del lote.",
        "La media recorre también las N filas del lote: divide por N·K.",
        "`{nombre}` is N times too large: averaged over the outputs only."),
    "sin_dividir_por_accum": (
        "Pérdida sin dividir por accum",
        "`{nombre}` es {razon:.3g} × el valor correcto, exactamente el número de micro-lotes "
        "acumulados.",
        "Cada micro-lote aporta su gradiente a `.grad`, y la suma debe ser el gradiente del "
        "lote completo: ¿qué le falta a la pérdida de cada micro-lote antes de `backward()`?",
        "`{nombre}` is accum times too large: the loss was not divided by accum."),
    "dividido_de_mas_por_accum": (
        "Dividido dos veces por accum",
        "`{nombre}` es 1/{inversa:.3g} del valor correcto.",
        "Busca dónde divides por `accum`: ¿lo haces en dos sitios (la pérdida y también los "
        "gradientes)?",
        "`{nombre}` is accum times too small: divided by accum twice."),
    "gradiente_aun_escalado": (
        "Gradiente todavía escalado",
        "`{nombre}` es {razon:.4g} × el valor correcto: el factor de escala del `GradScaler`.",
        "El `GradScaler` multiplica la pérdida antes de `backward()`: ¿deshiciste esa escala "
        "(`scaler.unscale_`) antes de recortar o de leer los gradientes?",
        "`{nombre}` still carries the GradScaler's scale: unscale_ before clipping or reading."),
    "escala_desconocida": (
        "Factor constante",
        "`{nombre}` es proporcional al valor correcto: {razon:.4g} × ese valor.",
        "Busca un factor constante de más o de menos (una media, un 2, un número de pasos).",
        "`{nombre}` is a constant multiple ({razon:.4g}) of the expected value."),
    "ceros": (
        "Todo ceros",
        "`{nombre}` es todo ceros, pero el valor correcto no lo es.",
        "¿Se anuló la cadena de derivadas (una máscara al revés, un gradiente que no llega)?",
        "`{nombre}` is all zeros but the expected value is not."),
    "no_finito": (
        "NaN o infinito",
        "`{nombre}` contiene NaN o infinitos.",
        "Busca divisiones por cero, `log` de 0 o desbordamientos en 16 bits.",
        "`{nombre}` contains NaN or infinite values."),
    "resultado_fijo": (
        "Resultado fijo",
        "Tu función devuelve, para entradas distintas, siempre la respuesta del ejemplo de la "
        "comprobación pública.",
        "¿Copiaste el resultado del ejemplo? Calcula a partir de las entradas.",
        "Your function returns the public example's answer for every input (hard-coded?)."),
    "resultado_constante": (
        "El resultado no depende de las entradas",
        "Tu función devuelve lo mismo para entradas distintas.",
        "¿Devuelves algo calculado fuera de la función (una variable global, un valor de una "
        "celda anterior)? Calcula a partir de los argumentos que recibe.",
        "Your function returns the same result for different inputs."),
    "tensor_equivocado": (
        "Gradiente de otro tensor",
        "`{nombre}` es el valor esperado para {otro}.",
        "Revisa el orden: un gradiente por parámetro, en el orden de `model.parameters()`.",
        "`{nombre}` holds the value expected for {otro}."),
    # --- types and shapes ----------------------------------------------------------------
    "es_none": (
        "Gradiente ausente (None)",
        "`{nombre}` es None.",
        "¿Falta un `return`, o el grafo se cortó (`detach`, `no_grad`, un tensor que no es hoja)?",
        "`{nombre}` is None."),
    "none_no_hoja": (
        "Gradiente de un tensor intermedio",
        "`{nombre}` es None porque el tensor no es una hoja del grafo: `.grad` solo se guarda en "
        "las hojas.",
        "`.grad` solo se rellena en las hojas. Para un tensor intermedio, mira `retain_grad()` "
        "o `torch.autograd.grad`.",
        "`{nombre}` is None: the tensor is not a leaf."),
    "none_sin_requires_grad": (
        "Tensor sin requires_grad",
        "`{nombre}` es None porque el tensor no tiene `requires_grad=True`: el grafo no lo "
        "registró (¿se creó bajo `torch.no_grad()` o con `.detach()`?).",
        "¿En qué momento pasa el tensor a requerir gradiente? Tiene que ser antes del pase "
        "hacia adelante (mira `requires_grad_`).",
        "`{nombre}` is None: the tensor does not require grad (no_grad or detach?)."),
    "none_sin_backward": (
        "Falta backward",
        "`{nombre}` es None: el tensor es una hoja que requiere gradiente, pero ningún "
        "`backward()` llegó hasta él.",
        "¿Llamaste a `backward()` sobre la pérdida correcta, o el camino pasa por un `detach()`?",
        "`{nombre}` is None: no backward reached this leaf."),
    "tipo": (
        "Tipo incorrecto",
        "`{nombre}` debería ser {esperado}, pero es `{tipo}`.",
        "Lee el docstring: dice qué debe devolver la función.",
        "`{nombre}` should be {esperado}, got `{tipo}`."),
    "forma": (
        "Forma incorrecta",
        "`{nombre}` tiene forma {forma}, se esperaba {forma_esperada}.",
        "Imprime `.shape` en cada paso. Un gradiente tiene la forma del tensor respecto del "
        "cual derivas; `torch.stack` añade una dimensión nueva y `torch.cat` no.",
        "`{nombre}` has shape {forma}, expected {forma_esperada}."),
    "forma_transpuesta": (
        "Resultado traspuesto",
        "`{nombre}` es la traspuesta del resultado correcto (forma {forma}; se esperaba "
        "{forma_esperada}).",
        "Revisa el orden de los factores del producto matricial: ¿cuál va traspuesto?",
        "`{nombre}` is the transpose of the expected result."),
    "dtype": (
        "dtype incorrecto",
        "`{nombre}` tiene dtype {dtype}, se esperaba {dtype_esperado}.",
        "No cambies la precisión: ¿algún `.float()`, o un tensor nuevo creado sin indicar su "
        "`dtype`?",
        "`{nombre}` has dtype {dtype}, expected {dtype_esperado}."),
    "longitud": (
        "Número de elementos",
        "`{nombre}` tiene {longitud} elementos, se esperaban {longitud_esperada}.",
        "Devuelve uno por parámetro, en el orden de `model.parameters()`.",
        "`{nombre}` has {longitud} items, expected {longitud_esperada}."),
    # --- side effects and graph ------------------------------------------------------------
    "modificada": (
        "Entrada modificada",
        "Tu función modificó su entrada `{nombre}` (sus valores o su `requires_grad`).",
        "¿Qué operación escribe sobre la entrada (un método con `_` final, una asignación por "
        "índice, `.data`)? Quien llama espera encontrar sus tensores como los dejó.",
        "Your function modified its input `{nombre}`."),
    "efecto_secundario": (
        "Efecto secundario",
        "Tu función cambió lo que recibió y el enunciado pide dejarlo como estaba: {que}.",
        "Quien llama espera encontrar sus objetos como los dejó: el modo de autograd, los "
        "`requires_grad` y `.grad`, los modos de entrenamiento y evaluación, la configuración "
        "de la pérdida y del optimizador. ¿Qué cambias sin restaurarlo antes de devolver?",
        "Your function changed what it was given: {que}."),
    "sin_grafo": (
        "Sin grafo (create_graph)",
        "`{nombre}` no tiene `grad_fn`: no se puede derivar.",
        "Por defecto, `torch.autograd.grad` devuelve gradientes sin grafo. ¿Qué argumento suyo "
        "los deja en el grafo para poder derivarlos otra vez?",
        "`{nombre}` has no grad_fn: it cannot be differentiated (create_graph=True?)."),
    "segundo_backward": (
        "Segundo backward sin retain_graph",
        "Recorriste el mismo grafo dos veces y la primera pasada ya había liberado sus tensores "
        "intermedios.",
        "La primera pasada libera el grafo al terminar. ¿Qué argumento de `backward` (o de "
        "`torch.autograd.grad`) lo conserva?",
        "A second backward through a graph already freed (retain_graph=True)."),
    "acumulado_sin_clone": (
        "p.grad guardado sin clone",
        "`{nombre}` es la suma de los gradientes de las dos pérdidas.",
        "¿Guardaste `p.grad` sin `.clone()`? El segundo `backward()` suma sobre ese mismo "
        "tensor.",
        "`{nombre}` aliases p.grad, which the next backward accumulated into (clone it)."),
    "acumulado_sin_zero": (
        "Gradientes acumulados entre pérdidas",
        "`{nombre}` es la suma de los gradientes de las dos pérdidas: `.grad` acumula.",
        "`.grad` acumula: ¿qué hay en `.grad` cuando empieza el `backward()` de la segunda "
        "pérdida?",
        "`{nombre}` is the sum of both losses' gradients: zero .grad in between."),
    "forward_repetido": (
        "Pase hacia adelante repetido",
        "Llamaste al modelo {llamadas} veces; el ejercicio pide un único pase hacia adelante.",
        "¿Cuántas veces llamas al modelo? Las dos pérdidas pueden salir de la misma salida "
        "(mira `retain_graph=True`).",
        "The model was called {llamadas} times; one forward pass was expected."),
    "grad_poblado": (
        ".grad modificado",
        "Tu función dejó valores en el `.grad` de los parámetros.",
        "`backward()` escribe en el `.grad` de los parámetros. ¿Qué función de autograd "
        "devuelve los gradientes sin tocar `.grad`?",
        "Your function left values in the parameters' .grad."),
    "grafo_vivo": (
        "Grafo retenido al registrar",
        "El valor registrado `{nombre}` es un tensor con `grad_fn`: mantiene vivo el grafo de "
        "cada iteración y la memoria crece paso a paso.",
        "¿Qué guardas en la lista: el tensor de la pérdida, con su `grad_fn`, o un número de "
        "Python?",
        "The logged value `{nombre}` is a tensor with grad_fn: it keeps every graph alive."),
    "registro_tensor": (
        "Tensor en vez de número",
        "El valor registrado `{nombre}` es un tensor; se esperaba un número de Python.",
        "El registro guarda números de Python, no tensores: mira `.item()`.",
        "The logged value `{nombre}` is a tensor, not a Python number."),
    # --- the training loop -----------------------------------------------------------------
    "sin_step": (
        "Parámetros sin actualizar",
        "Los parámetros no cambiaron: no se aplicó ningún paso del optimizador.",
        "Calcular los gradientes no cambia los parámetros: ¿qué llamada los actualiza después "
        "de `backward()`?",
        "The parameters did not change: optimizer.step() was never applied."),
    "scheduler_antes_que_optimizer": (
        "Planificador antes que el optimizador",
        "`scheduler.step()` se llamó antes que `optimizer.step()`.",
        "Revisa el orden: ¿qué va primero, el paso del optimizador o el del planificador?",
        "scheduler.step() was called before optimizer.step()."),
    "scheduler_veces": (
        "Planificador: número de pasos",
        "`scheduler.step()` se llamó {veces} veces; se esperaban {veces_esperadas} (una por cada "
        "paso real del optimizador).",
        "El planificador avanza una vez por cada paso real del optimizador: con acumulación de "
        "gradientes, ¿dónde llamas a `scheduler.step()`?",
        "scheduler.step() ran {veces} times, expected {veces_esperadas}."),
    "clip_antes_de_unscale": (
        "Recorte antes de unscale_",
        "Recortaste los gradientes antes de `scaler.unscale_(optimizer)`: recortaste gradientes "
        "todavía multiplicados por la escala.",
        "Cuando recortas, ¿los gradientes siguen multiplicados por la escala? Sigue el "
        "recorrido de `GradScaler`: escalar, `backward()`, deshacer la escala, recortar, paso y "
        "`update()`.",
        "Gradients were clipped before scaler.unscale_(optimizer)."),
    "zero_grad_ausente": (
        "Falta zero_grad",
        "No se llamó a `optimizer.zero_grad()` en cada paso: los gradientes de un paso se suman "
        "a los del siguiente.",
        "¿En qué momento de cada paso del optimizador se vacían los gradientes?",
        "optimizer.zero_grad() was not called on every step."),
    "orden_llamadas": (
        "Orden del bucle",
        "El orden de las llamadas fue {orden}; se esperaba {orden_esperado}.",
        "El paso de entrenamiento tiene un orden fijo; revisa dónde va cada llamada.",
        "Calls ran in the order {orden}; expected {orden_esperado}."),
    "modelo_en_eval": (
        "Modelo en modo evaluación",
        "El modelo quedó en modo evaluación (`model.training` es False).",
        "¿En qué modo dejas el modelo al terminar de evaluar? Quien llama sigue entrenando.",
        "The model was left in eval mode."),
    "modelo_en_train": (
        "Modelo en modo entrenamiento",
        "El modelo estaba en modo entrenamiento durante la evaluación.",
        "Dropout y BatchNorm cambian de comportamiento según el modo: ¿en qué modo está el "
        "modelo mientras evalúas?",
        "The model was in train mode during evaluation."),
    "buffers_cambiados": (
        "BatchNorm modificada al evaluar",
        "Las estadísticas acumuladas de BatchNorm ({nombre}) cambiaron durante la evaluación.",
        "En modo entrenamiento, BatchNorm actualiza `running_mean` y `running_var` con cada "
        "lote: ¿en qué modo está el modelo mientras evalúas?",
        "BatchNorm running statistics ({nombre}) changed during evaluation."),
    # --- errors --------------------------------------------------------------------------
    "excepcion": (
        "Error al ejecutar",
        "Tu función lanzó una excepción:\n{detalle}",
        "Lee el mensaje de error: suele decir qué línea y qué forma fallaron.",
        "Your function raised an exception."),
    "resultado_no_comprobable": (
        "Resultado que no se pudo comprobar",
        "Tu función terminó, pero al examinar su resultado la comprobación falló ({detalle}). "
        "Suele ser un resultado de un tipo, una forma o una estructura que el enunciado no "
        "pide.",
        "Compara lo que devuelves (tipo, forma, dtype, contenedor) con lo que pide el "
        "enunciado; si coincide, avisa a tu profesor: puede ser un fallo de la comprobación.",
        "Your function returned, but checking its result failed ({detalle})."),
    "sin_definir": (
        "Función sin definir",
        "La función `{nombre}` no está definida cuando llega su prueba.",
        "Ejecuta su celda sin errores y no le cambies el nombre.",
        "The function `{nombre}` is not defined when its test runs."),
    "manipulacion": (
        "Manipulación detectada",
        "Durante la calificación se detectó: {que}. Este ejercicio no puntúa.",
        "No modifiques torch, numpy, los builtins ni las utilidades del curso, y no leas "
        "archivos del curso: resuelve el ejercicio con tu propio código.",
        "Tampering detected during grading: {que}. This exercise scores zero."),
    "sin_observacion": (
        "Prueba interrumpida",
        "La prueba oculta no pudo terminar: {motivo}.",
        "¿Tu función tarda demasiado, entra en un bucle infinito o termina el proceso?",
        "The hidden test could not finish: {motivo}."),
    "sin_implementar": (
        "Sin implementar",
        "La función todavía lanza `NotImplementedError`.",
        "Quita el `NotImplementedError` del esqueleto y escribe tu solución.",
        "The function still raises NotImplementedError."),
}


def registrar(mensajes):
    """Add a chapter's own entries (``student/chNN.py`` calls this with its ``MENSAJES``).

    An id may be defined once: a chapter cannot silently reword another's message.
    """
    repetidos = sorted(set(mensajes) & set(CATALOGO))
    if repetidos:
        raise ValueError(f"diagnosis ids already in the catalogue: {repetidos}")
    for diagnostico, entrada in mensajes.items():
        if len(entrada) != 4:
            raise ValueError(f"{diagnostico}: expected (title, es, hint, en)")
    CATALOGO.update(mensajes)


# Diagnoses that name no misconception: shown without the "Error frecuente" title.
SIN_NOMBRE = {"no_reconocido", "excepcion"}


def texto(diagnostico, hechos, idioma="es", arreglo=None):
    """The message for ``diagnostico`` with its facts, as shown to a student.

    ``arreglo``: how to fix it, added only in the feedback after grading."""
    titulo, es, pista, en = CATALOGO[diagnostico]
    if idioma == "en":
        return en.format(**hechos)
    cabecera = "" if diagnostico in SIN_NOMBRE else f"Error frecuente: {titulo}. "
    lineas = [cabecera + es.format(**hechos), "Pista: " + pista]
    if arreglo:
        lineas.append("Cómo corregirlo: " + arreglo)
    if hechos.get("detalles"):
        lineas.append(hechos["detalles"])
    return "\n  ".join(lineas)
