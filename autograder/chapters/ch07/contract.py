"""Chapter 7's contracts, clause by clause (``autograder.contract``): the docstrings show
them numbered; each names the hidden cases that check it and the variants that break it."""

from autograder.contract import EVERY_CASE, Clause

_NOT_WRITING = ("No escribe nada mientras se ejecuta, ni en ``forward`` ni en ``backward``: "
                "ni ``print`` ni ``sys.stderr`` (en un entrenamiento se llama miles de "
                "veces).")
_NOT_INFERENCE = ("La salida es un tensor normal, que otras operaciones pueden seguir usando "
                  "con autograd: nada de ``torch.inference_mode()`` (dentro de ``forward`` "
                  "autograd ya está desactivado).")

CLAUSES = {
    "stable_softplus": (
        Clause("Devuelve un tensor con la forma y el dtype de ``x``: ``x`` es float32 o "
               "float64, de cualquier forma (también 0-dim).",
               (("x.ndim", 0), ("x.dtype", "float32")), ("softplus_computes_in_float64",)),
        Clause("Su valor es log(1 + e^(beta·x)) / beta, con el 1/beta de delante; ``beta`` es "
               "un ``float`` de Python positivo, a un lado u otro de 1, sin gradiente.",
               (("beta respecto de 1", "<1"), ("beta respecto de 1", ">1")),
               ("softplus_forgets_divide_by_beta",)),
        Clause("Es finito y exacto para todo ``x`` con ``beta·x`` finito, por enorme que sea "
               "|beta·x|: también entre 88 y 709, donde ``exp`` desborda en float32 pero no "
               "en float64.",
               (("x enorme |beta·x| ≥ 10⁴", True),
                ("x con beta·x = ±200 (desborda exp en float32)", True)),
               ("softplus_naive_log_exp", "softplus_threshold_700")),
        Clause("Funciona también cuando no hay grafo que construir, bajo ``torch.no_grad()`` "
               "o con un ``x`` que no requiere gradiente: entonces solo calcula el valor, y "
               "bajo ``torch.no_grad()`` la salida no tiene grafo (nada de "
               "``torch.enable_grad()`` alrededor).",
               (("modo de autograd del llamador", False), ("x.requires_grad", False)),
               ("softplus_retains_the_output_grad", "softplus_enable_grad_around_apply")),
        Clause("La salida sale de ``TuFunction.apply`` (su ``grad_fn`` es el nodo de tu "
               "Function), no de operaciones de PyTorch que autograd derive por ti.",
               EVERY_CASE, ("softplus_plain_autograd",)),
        Clause(_NOT_INFERENCE, EVERY_CASE, ("softplus_forward_under_inference_mode",)),
        Clause("``backward`` devuelve ``grad_output * sigmoid(beta·x)`` para ``x``: con el "
               "gradiente de arriba, la beta dentro de la sigmoide y ningún factor más, "
               "también en beta·x = 0, donde vale ``grad_output / 2``.",
               (("x con beta·x = 0", True),),
               ("softplus_forgets_grad_output", "softplus_derivative_ignores_beta",
                "softplus_derivative_with_extra_beta", "softplus_derivative_over_beta",
                "softplus_sigmoid_of_minus_x", "softplus_derivative_of_the_wrong_function",
                "softplus_zero_at_the_origin")),
        Clause("El gradiente es finito también con |beta·x| enorme: la sigmoide no desborda.",
               (("x extremos |beta·x| ≥ 1000", True),), ("softplus_naive_sigmoid",)),
        Clause("``backward`` devuelve un valor por argumento de ``forward``: ``None`` para "
               "``beta``.",
               EVERY_CASE, ("softplus_one_gradient_for_two_inputs",)),
        Clause("``backward`` es analítico: no usa autograd dentro (ni ``torch.autograd.grad`` "
               "ni ``.backward()`` ni ``torch.enable_grad()``).",
               EVERY_CASE, ("softplus_backward_through_autograd",)),
        Clause("``backward`` saca los tensores de ``ctx.saved_tensors``, lo que guardó esa "
               "misma llamada con ``ctx.save_for_backward``: no de variables de fuera de la "
               "Function ni de atributos tensor de ``ctx``.",
               EVERY_CASE, ("softplus_backward_reads_the_closure",
                            "softplus_x_as_ctx_attribute")),
        Clause("Cada llamada guarda lo suyo en su ``ctx``: nada en la clase ni en variables "
               "compartidas, porque la misma Function se llama varias veces, con otras "
               "``beta``, antes del pase hacia atrás.",
               EVERY_CASE, ("softplus_beta_as_class_attribute",)),
        Clause("No cambia ``x`` (sus valores, su ``requires_grad`` ni su ``.grad`` anterior, "
               "si lo trae) ni el modo de autograd de quien llama.",
               (("x.grad vieja", True), ("modo de autograd del llamador", False)),
               ("softplus_scales_x_in_place", "softplus_turns_grad_on")),
        Clause("``backward`` no cambia ``grad_output``: calcula un tensor nuevo.",
               EVERY_CASE, ("softplus_in_place_on_grad_output",)),
        Clause(_NOT_WRITING, EVERY_CASE, ("softplus_debug_print",)),
    ),
    "quantize_ste": (
        Clause("Devuelve un tensor con la forma y el dtype de ``x``: ``x`` es float32 o "
               "float64, de cualquier forma (también 0-dim).",
               (("x.ndim", 0), ("x.dtype", "float32")), ("quantize_computes_in_float64",)),
        Clause("Con L = levels·step (calculado en Python; ``levels`` es un ``int`` ≥ 1, "
               "también 1), el pase hacia adelante recorta ``x`` a [−L, L], no a ±levels.",
               (("levels", 1), ("x a más de medio step fuera, por los dos lados", True)),
               ("quantize_without_clipping", "quantize_range_ignores_step")),
        Clause("Lleva cada valor recortado al múltiplo de ``step`` más cercano, "
               "``torch.round(x / step) * step`` (no truncado, y multiplicado otra vez por "
               "``step``), con ``step`` un ``float`` positivo cualquiera: no necesariamente "
               "una potencia de 2 (0.1, 0.375...).",
               (("step.tipo", "exacto"), ("step.tipo", "inexacto")),
               ("quantize_returns_levels", "quantize_truncates")),
        Clause("Funciona también cuando no hay grafo que construir, bajo ``torch.no_grad()`` "
               "o con un ``x`` que no requiere gradiente: entonces solo calcula el valor, y "
               "bajo ``torch.no_grad()`` la salida no tiene grafo (nada de "
               "``torch.enable_grad()`` alrededor).",
               (("modo de autograd del llamador", False), ("x.requires_grad", False)),
               ("quantize_retains_the_output_grad", "quantize_enable_grad_around",
                "quantize_hook_only_when_grad_is_on")),
        Clause("El pase hacia atrás deja pasar ``grad_output`` entero donde |x| ≤ L: en todo "
               "el rango, también en x = 0 y en el borde |x| = L.",
               (("x en ±levels·step exactamente", True), ("x = 0", True)),
               ("quantize_plain_round", "quantize_strict_mask", "quantize_min_max_clamp",
                "quantize_sign_times_clamped_magnitude")),
        Clause("Da 0 donde |x| > L, por poco que sea (también a step/4096 del borde) y por los "
               "dos lados, mirando la ``x`` original, no la redondeada. Si L no es exacto en "
               "el dtype de ``x``, la comprobación no usa valores a menos de un redondeo del "
               "borde, ni empates del redondeo.",
               (("x justo fuera de ±levels·step (por step/4096)", True),
                ("x a menos de medio step fuera, por los dos lados", True)),
               ("quantize_identity_everywhere", "quantize_one_sided_mask",
                "quantize_fake_quantize_builtin", "quantize_mask_with_a_tolerance")),
        Clause("Vale una ``torch.autograd.Function`` (cuyo ``backward`` devuelve un valor por "
               "argumento de ``forward``: ``None`` para ``step`` y ``levels``) o el truco de "
               "``.detach()``.",
               EVERY_CASE, ("quantize_forgets_the_nones",)),
        Clause("Una Function guarda lo de cada llamada en su ``ctx``: nada en la clase ni en "
               "variables compartidas, porque se llama varias veces, con otros ``step`` y "
               "``levels``, antes del pase hacia atrás.",
               EVERY_CASE, ("quantize_limit_as_class_attribute",)),
        Clause(_NOT_INFERENCE, EVERY_CASE, ("quantize_forward_under_inference_mode",)),
        Clause("No cambia ``x`` (sus valores, su ``requires_grad`` ni su ``.grad`` anterior, "
               "si lo trae) ni el modo de autograd de quien llama.",
               (("x.grad vieja", True),), ("quantize_clamps_x_in_place",)),
        Clause("El pase hacia atrás no cambia ``grad_output``: calcula un tensor nuevo.",
               EVERY_CASE, ("quantize_masks_grad_output_in_place",)),
        Clause(_NOT_WRITING, EVERY_CASE, ("quantize_debug_print",)),
    ),
    "linear_tanh": (
        Clause("Recibe ``x`` (N, D), ``weight`` (H, D) y ``bias`` (H,), con N, D, H ≥ 1 "
               "cualesquiera (también 1), los tres float32 o los tres float64, y devuelve un "
               "tensor (N, H) de ese dtype.",
               (("x.shape[0] = N", 1), ("x.shape[1] = D", 1), ("weight.shape[0] = H", 1)),
               ("linear_tanh_squeezes",)),
        Clause("Su valor es tanh(x · weightᵀ + bias), finito y exacto también con una "
               "preactivación enorme (|z| ≥ 50, donde e^(2z) desborda en float32).",
               (("preactivación enorme |z| ≥ 50 en float32", True),),
               ("linear_tanh_by_exponentials",)),
        Clause("Funciona también cuando no hay grafo que construir: bajo ``torch.no_grad()`` "
               "solo calcula el valor, y la salida no tiene grafo (nada de "
               "``torch.enable_grad()`` alrededor).",
               (("modo de autograd del llamador", False),),
               ("linear_tanh_retains_the_output_grad",
                "linear_tanh_enable_grad_around_apply")),
        Clause("La salida sale de ``TuFunction.apply`` (su ``grad_fn`` es el nodo de tu "
               "Function), no de operaciones de PyTorch que autograd derive por ti.",
               EVERY_CASE, ("linear_tanh_plain_autograd",)),
        Clause(_NOT_INFERENCE, EVERY_CASE, ("linear_tanh_forward_under_inference_mode",)),
        Clause("Con g = ``grad_output`` y ∂L/∂z = g ⊙ (1 − y²): grad_x = ∂L/∂z · weight, "
               "grad_weight = (∂L/∂z)ᵀ · x y grad_bias = la suma (no la media) de ∂L/∂z "
               "sobre las N filas.",
               EVERY_CASE, ("linear_tanh_derivative_of_z", "linear_tanh_one_minus_y",
                            "linear_tanh_bias_gradient_mean")),
        Clause("Cada gradiente tiene la forma de su entrada: (N, D), (H, D) y (H,), en el "
               "orden ``(grad_x, grad_weight, grad_bias)``.",
               (("x N, D, H distintos", True),),
               ("linear_tanh_weight_gradient_transposed",
                "linear_tanh_grad_x_with_weight_transposed")),
        Clause("Guarda con ``ctx.save_for_backward`` como mucho tantos números como ``x``, "
               "``weight`` y la salida juntos: puede guardar la preactivación en lugar de la "
               "salida (no las dos), o ``None`` en lugar de lo que no vaya a usar.",
               EVERY_CASE, ("linear_tanh_saves_everything",)),
        Clause("No guarda el sesgo (ninguna fórmula del gradiente lo usa) ni recalcula en "
               "``backward`` la salida con él.",
               (("x.shape[0] = N", 1),), ("linear_tanh_recomputes_the_output",)),
        Clause("Ningún tensor como atributo de ``ctx``: ``backward`` lee de "
               "``ctx.saved_tensors`` lo que guardó esa misma llamada.",
               EVERY_CASE, ("linear_tanh_tensors_as_ctx_attributes",)),
        Clause("Nada fuera de la Function (una variable global, un atributo de la clase): "
               "la misma capa se llama varias veces antes del pase hacia atrás.",
               EVERY_CASE, ("linear_tanh_global_storage",)),
        Clause("``backward`` es analítico: no usa autograd dentro (ni ``torch.autograd.grad`` "
               "ni ``.backward()`` ni ``torch.enable_grad()``).",
               EVERY_CASE, ("linear_tanh_backward_through_autograd",)),
        Clause("Para cada entrada cuyo ``ctx.needs_input_grad`` es ``False`` (cualquiera de "
               "las tres, también dos a la vez), ``backward`` devuelve ``None``.",
               (("x.requires_grad", False), ("weight.requires_grad", False),
                ("bias.requires_grad", False)),
               ("linear_tanh_always_all_gradients", "linear_tanh_needs_input_grad_for_x_only")),
        Clause("``backward`` ni siquiera calcula el gradiente de esas entradas: nada de "
               "calcular los tres y descartar después los que nadie pide.",
               (("x.requires_grad", False), ("weight.requires_grad", False),
                ("bias.requires_grad", False)),
               ("linear_tanh_computes_all_then_drops",)),
        Clause("No cambia nada de lo que recibe: valores, ``requires_grad`` y ``.grad`` "
               "anterior de ``x``, ``weight`` y ``bias``, ni el modo de autograd de quien "
               "llama.",
               (("x.grad vieja", True),), ("linear_tanh_clears_the_stale_grads",)),
        Clause("``backward`` no cambia ``grad_output``: calcula tensores nuevos.",
               EVERY_CASE, ("linear_tanh_in_place_on_grad_output",)),
        Clause(_NOT_WRITING, EVERY_CASE, ("linear_tanh_debug_print",)),
    ),
    "checkpoint_apply": (
        Clause("``fn`` es una función de PyTorch determinista y derivable que recibe ``x`` y "
               "los ``params`` en ese orden (cero o más, del dtype de ``x``); ``x`` es (N, D), "
               "float32 o float64, con N, D ≥ 1. Devuelve un tensor con los valores y el "
               "dtype de ``fn(x, *params)``.",
               (("params.cuántos", 0), ("x.shape[0] = N", 1), ("x.shape[1] = D", 1),
                ("x.dtype", "float64")),
               ("checkpoint_forward_in_float32",)),
        Clause("Funciona también cuando no hay grafo que construir: bajo ``torch.no_grad()`` "
               "solo calcula el valor, y la salida no tiene grafo (nada de "
               "``torch.enable_grad()`` alrededor).",
               (("modo de autograd del llamador", False),),
               ("checkpoint_retains_the_output_grad",
                "checkpoint_enable_grad_around_apply")),
        Clause("La salida sale de ``TuFunction.apply`` (su ``grad_fn`` es el nodo de tu "
               "Function).",
               EVERY_CASE, ("checkpoint_plain_call",)),
        Clause(_NOT_INFERENCE, EVERY_CASE, ("checkpoint_forward_under_inference_mode",)),
        Clause("``forward`` ejecuta ``fn`` una sola vez.",
               EVERY_CASE, ("checkpoint_forward_runs_fn_twice",)),
        Clause("``forward`` ejecuta ``fn`` sin construir grafo y guarda con "
               "``ctx.save_for_backward`` solo las entradas mismas (``x`` y ``params``): ni "
               "copias ni activaciones intermedias.",
               EVERY_CASE, ("checkpoint_forward_keeps_the_graph",)),
        Clause("Ningún tensor como atributo de ``ctx``: ``backward`` lee de "
               "``ctx.saved_tensors`` lo que guardó esa misma llamada.",
               EVERY_CASE, ("checkpoint_inputs_as_ctx_attribute",)),
        Clause("Cada llamada guarda lo suyo en su ``ctx``, también ``fn``: nada en la clase ni "
               "en variables compartidas, porque se llama varias veces, con otras ``fn``, "
               "antes del pase hacia atrás.",
               EVERY_CASE, ("checkpoint_fn_as_class_attribute",)),
        Clause("``backward`` recalcula ``fn`` bajo ``torch.enable_grad()``: dentro de "
               "``backward`` autograd está desactivado.",
               EVERY_CASE, ("checkpoint_backward_without_enable_grad",)),
        Clause("Recalcula sobre copias de lo guardado separadas del grafo de fuera "
               "(``.detach()``), no sobre los tensores guardados tal cual: no acumula nada en "
               "el ``.grad`` de las entradas.",
               (("x.grad vieja", True),), ("checkpoint_recomputes_on_the_saved_tensors",
                                         "checkpoint_recomputes_on_the_saved_with_grad")),
        Clause("``backward`` ejecuta ``fn`` exactamente una vez más.",
               EVERY_CASE, ("checkpoint_recomputes_twice",)),
        Clause("``backward`` devuelve ``(None, grad_x, *grad_params)``: ``None`` para ``fn``, "
               "luego ``x``, luego cada parámetro en su orden.",
               (("params.cuántos", 2), ("params.cuántos", 3)),
               ("checkpoint_x_gradient_last", "checkpoint_forgets_the_none_for_fn")),
        Clause("Los gradientes son los que daría autograd sobre ``fn`` sin recálculo, para "
               "``x`` y para cada parámetro que requiere gradiente.",
               (("params.cuántos", 2), ("params.cuántos", 3)), ("checkpoint_only_x",)),
        Clause("``None`` para cada tensor cuyo ``ctx.needs_input_grad`` es ``False`` (``x`` "
               "como datos, un parámetro congelado).",
               (("x.requires_grad", False), ("params.alguno sin requires_grad", True)),
               ("checkpoint_gradients_for_everything",)),
        Clause("No cambia nada de lo que recibe, tampoco durante el pase hacia atrás: "
               "valores, ``requires_grad`` y ``.grad`` de ``x`` y de cada parámetro, "
               "``grad_output``, ni el modo de autograd de quien llama.",
               (("modo de autograd del llamador", False),), ("checkpoint_turns_grad_on",)),
        Clause(_NOT_WRITING, EVERY_CASE, ("checkpoint_debug_print",)),
    ),
}
