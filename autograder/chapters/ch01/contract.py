"""Chapter 1's contracts, clause by clause (``autograder.contract``): the docstrings show
them numbered; each names the hidden cases that check it and the variants that break it."""

from autograder.contract import EVERY_CASE, Clause

SIZES_OF_ONE = (("x.shape[0]", 1), ("x.shape[1]", 1), ("W1.shape[1]", 1), ("y.shape[1]", 1))
DTYPES = (("model.dtype", "torch.float32"), ("model.dtype", "torch.float64"))
MODES = tuple(("model.modo", m) for m in ("train", "eval", "mixto", "mixto_eval"))

CLAUSES = {
    "manual_backward": (
        Clause('Devuelve un ``dict`` con las claves ``"W1"``, ``"b1"``, ``"W2"`` y ``"b2"``.',
               EVERY_CASE, ("manual_backward_returns_a_tuple",)),
        Clause("En cada clave, el gradiente de ``L = mean((relu(x @ W1 + b1) @ W2 + b2 - y) ** "
               "2)`` respecto de ese parámetro, con ``x`` (N, D), ``y`` (N, K), ``W1`` (D, H), "
               "``b1`` (H,), ``W2`` (H, K) y ``b2`` (K,).",
               EVERY_CASE,
               ("manual_backward_sign_flipped", "manual_backward_forgets_the_2")),
        Clause("``L`` es la media de ``(ŷ - y) ** 2`` sobre los N·K elementos: ni su suma ni "
               "la media solo sobre las N filas.",
               EVERY_CASE,
               ("manual_backward_divides_by_batch_only", "manual_backward_sum_not_mean")),
        Clause("La derivada de la ReLU vale 0 donde ``z < 0`` y 1 donde ``z > 0``; donde ``z`` "
               "vale exactamente 0 puede tomarse 0 o 1.",
               (("z.cero", True),),
               ("manual_backward_without_the_relu_mask",
                "manual_backward_sign_as_relu_derivative")),
        Clause("Cada gradiente tiene la forma de su parámetro: (D, H), (H,), (H, K) y (K,).",
               EVERY_CASE, ("manual_backward_transposed_w2",)),
        Clause("N, D, H y K pueden valer 1 (una sola muestra, una sola salida...), y esas "
               "formas conservan sus dimensiones de tamaño 1.",
               SIZES_OF_ONE,
               ("manual_backward_squeezed", "manual_backward_squeezes_the_first_layer")),
        Clause("Todas las entradas son del mismo dtype, ``float32`` o ``float64``, y cada "
               "gradiente es de ese dtype.",
               (("x.dtype", "torch.float32"), ("x.dtype", "torch.float64")),
               ("manual_backward_float32_accumulators",
                "manual_backward_in_float64_for_precision")),
        Clause("Se llama dentro de ``torch.no_grad()`` y no usa autograd: ni vuelve a activar "
               "el cálculo de gradientes (``enable_grad``, ``set_grad_enabled(True)``) ni llama "
               "a ``backward`` o a ``torch.autograd.grad``.",
               EVERY_CASE, ("manual_backward_with_autograd",)),
        Clause("No cambia los valores de ninguna entrada.",
               EVERY_CASE, ("manual_backward_reuses_y_as_a_buffer",)),
        Clause("``W1``, ``b1``, ``W2`` y ``b2`` pueden llegar con ``requires_grad=True`` o sin "
               "él, y salen con el que tenían.",
               (("W1.requires_grad", True), ("W1.requires_grad", False)),
               ("manual_backward_forces_requires_grad_on",)),
        Clause("Pueden llegar con un ``.grad`` de antes o sin él: no lo escribe, no lo cambia "
               "y no lo borra.",
               (("W1.grad", True), ("W1.grad", False)),
               ("manual_backward_also_fills_the_grads", "manual_backward_clears_the_grads")),
    ),
    "two_loss_grads": (
        Clause("Devuelve ``(grads_a, grads_b)``: una tupla o una lista de dos listas o tuplas "
               "de tensores.",
               EVERY_CASE, ("two_loss_grads_as_dicts",)),
        Clause("Cada una tiene un gradiente por parámetro de ``model``, en el orden de "
               "``model.parameters()``: también los de submódulos anidados a varios niveles, "
               "los de una BatchNorm y los que el modelo registra él mismo.",
               (("model.profundidad", 2), ("model.param_propio", True),
                ("model.batchnorm", "train")),
               ("two_loss_grads_params_from_children", "two_loss_grads_linear_layers_only")),
        Clause("``x`` (N, D) e ``y`` (N, K) son del dtype del modelo, ``float32`` o "
               "``float64``, y cada gradiente tiene la forma y el dtype de su parámetro.",
               DTYPES, ("two_loss_grads_copies_through_lists",)),
        Clause("``grads_a`` son los gradientes de ``F.mse_loss(model(x), y)`` y ``grads_b`` "
               "los de ``F.l1_loss(model(x), y)``, en ese orden.",
               EVERY_CASE, ("two_loss_grads_in_the_other_order",)),
        Clause("Las dos pérdidas promedian sobre los N·K elementos, su reducción por defecto.",
               EVERY_CASE, ("two_loss_grads_l1_summed_over_outputs",)),
        Clause("La salida de ``model(x)`` es (N, K), como ``y``, también con N = 1 o K = 1.",
               (("x.shape[0]", 1), ("y.shape[1]", 1)),
               ("two_loss_grads_squeezes_the_output",)),
        Clause("Cada juego es el de su pérdida sola: ``grads_a`` no tiene nada de la L1 ni "
               "``grads_b`` nada de la MSE, y calcular uno no cambia el otro.",
               EVERY_CASE,
               ("two_loss_grads_without_clone", "two_loss_grads_zeroes_only_at_the_start",
                "two_loss_grads_alias_zeroed_in_place")),
        Clause("Los parámetros pueden llegar con un ``.grad`` de antes: ninguno de los dos "
               "juegos lo incluye. El ``.grad`` puede quedar como sea al terminar.",
               (("model.grad", True),),
               ("two_loss_grads_without_zero_grad", "two_loss_grads_zeroes_only_in_between")),
        Clause("Llama a ``model`` exactamente una vez: un solo pase hacia adelante para las "
               "dos pérdidas.",
               EVERY_CASE, ("two_loss_grads_two_forwards",)),
        Clause("Calcula con cada submódulo en el modo en que llega: una BatchNorm en ``train`` "
               "normaliza con las estadísticas del lote, y una en ``eval`` con las acumuladas.",
               (("model.batchnorm", "train"), ("model.batchnorm", "eval")),
               ("two_loss_grads_in_eval_mode", "two_loss_grads_in_train_mode")),
        Clause("``model`` puede llegar entero en ``train``, entero en ``eval`` o mezclado (un "
               "submódulo en otro modo que su padre): al terminar, cada submódulo está en el "
               "modo en que llegó.",
               MODES, ("two_loss_grads_resets_the_mode_it_found",)),
        Clause("Se llama con el cálculo de gradientes activado. No cambia ``x`` ni ``y`` (ni "
               "sus valores ni su ``requires_grad``, que es ``False``), ni los valores o el "
               "``requires_grad`` de los parámetros.",
               EVERY_CASE,
               ("two_loss_grads_with_a_leftover_step", "two_loss_grads_marks_x")),
    ),
    "gradient_penalty": (
        Clause("Devuelve ``P``, la media sobre las N filas de ``(‖g_i‖₂ - 1) ** 2``, donde "
               "``g_i`` es el gradiente de la fila i de ``model(x)`` respecto de la fila i de "
               "``x``: penaliza las normas menores que 1 y las mayores.",
               EVERY_CASE,
               ("gradient_penalty_one_sided", "gradient_penalty_squared_norm")),
        Clause("``model`` lleva ``x`` (N, D) a una salida (N, 1) en la que cada fila depende "
               "solo de su fila de ``x``: una norma L2 por fila, no una de toda la matriz de "
               "gradientes.",
               EVERY_CASE, ("gradient_penalty_one_norm_for_the_batch",)),
        Clause("Es la media sobre las N filas, no su suma, con N ≥ 1 y D ≥ 1.",
               EVERY_CASE, ("gradient_penalty_summed_over_rows",)),
        Clause("Se llama con el cálculo de gradientes activado, y ``P`` se puede derivar "
               "respecto de los parámetros del modelo: tiene ``grad_fn``, y su gradiente es el "
               "de la fórmula.",
               EVERY_CASE, ("gradient_penalty_without_create_graph",)),
        Clause("``P`` es un tensor de dimensión 0 del dtype de ``x`` y del modelo, "
               "``float32`` o ``float64``.",
               DTYPES,
               ("gradient_penalty_accumulates_in_zeros_1",
                "gradient_penalty_accumulates_in_torch_zeros_1")),
        Clause("``x`` puede llegar con ``requires_grad=True`` o sin él, y con un ``.grad`` "
               "propio: sale con sus valores, su ``requires_grad`` y su ``.grad`` como llegó.",
               (("x.requires_grad", True), ("x.requires_grad", False), ("x.grad", True)),
               ("gradient_penalty_marks_the_input",
                "gradient_penalty_switches_requires_grad_back_off")),
        Clause("No cambia el ``.grad`` de los parámetros, lleguen con uno de antes o sin él.",
               (("model.grad", True), ("model.grad", False)),
               ("gradient_penalty_with_backward", "gradient_penalty_clears_the_parameters_grad",
                "gradient_penalty_backward_on_a_clone")),
        Clause("Calcula con cada submódulo en el modo en que llega: una BatchNorm en ``eval`` "
               "normaliza con sus estadísticas acumuladas, y no las cambia.",
               (("model.batchnorm", "eval"),), ("gradient_penalty_in_train_mode",)),
        Clause("``model`` puede tener submódulos anidados a varios niveles y parámetros "
               "propios, y llegar entero en ``train``, entero en ``eval`` o mezclado: al "
               "terminar, cada submódulo está en el modo en que llegó.",
               (*MODES, ("model.profundidad", 2), ("model.param_propio", True)),
               ("gradient_penalty_eval_and_restores_the_root_only",)),
    ),
}
