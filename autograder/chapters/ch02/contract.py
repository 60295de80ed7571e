"""Chapter 2's contracts, clause by clause (``autograder.contract``): the docstrings show
them numbered; each names the hidden cases that check it and the variants that break it."""

from autograder.contract import EVERY_CASE, Clause

MODES = ("train", "eval", "mixto", "mixto_eval")

CLAUSES = {
    "distillation_loss": (
        Clause("``x`` es un lote (N, D) con N >= 1 (también N = 1), y ``student`` y ``teacher`` "
               "lo llevan a logits (N, K), con K >= 2 clases.",
               (("x.N", 1), ("student.K", 2)),
               ("distillation_squeezes_the_logits",)),
        Clause("La pérdida es ``T² · KL(p ‖ q)`` con ``p = softmax(teacher(x) / T)`` y "
               "``q = softmax(student(x) / T)`` por fila: los logits de los dos modelos se "
               "dividen por la misma ``T``, y la KL va del profesor (``p``) al alumno (``q``).",
               EVERY_CASE,
               ("distillation_reverse_kl", "distillation_raw_teacher_probabilities",
                "distillation_probabilities_into_kl_div")),
        Clause("La KL de cada muestra es la suma sobre sus K clases, y la pérdida es la media "
               "sobre las N muestras: ``(T²/N) · Σᵢ Σₖ pᵢₖ (log pᵢₖ − log qᵢₖ)``.",
               EVERY_CASE,
               ("distillation_mean_reduction", "distillation_sum_reduction")),
        Clause("``temperature`` es un ``float`` mayor que 0 (también 1.0, o menor que 1), y el "
               "factor es ``T²``: ni ``T`` ni 1.",
               (("temperature", 2.5), ("temperature", 1.0)),
               ("distillation_without_the_square", "distillation_times_the_temperature")),
        Clause("Devuelve un tensor de dimensión 0 (forma ``()``) del dtype de ``x``, que es el "
               "de los dos modelos: ``float32`` o ``float64``.",
               (("x.dtype", "torch.float32"), ("x.dtype", "torch.float64")),
               ("distillation_returns_a_number", "distillation_float64_target")),
        Clause("Se llama con autograd activado y con los parámetros del alumno entrenables: la "
               "pérdida está en el grafo del alumno, y el ``loss.backward()`` de quien llama "
               "funciona y da a cada uno de ellos su gradiente.",
               EVERY_CASE,
               ("distillation_everything_without_a_graph", "distillation_inference_mode",
                "distillation_clone_inside_inference_mode")),
        Clause("La salida del profesor es un objetivo constante: ese ``backward()`` no deja "
               "gradiente en ninguno de sus parámetros, aunque lleguen entrenables.",
               (("teacher.frozen", "nada"),),
               ("distillation_teacher_in_the_graph", "distillation_teacher_in_eval_mode_only")),
        Clause("Los parámetros del profesor pueden llegar entrenables, congelados o una parte "
               "de cada: cada uno termina con el ``requires_grad`` con que llegó.",
               (("teacher.frozen", "parte"), ("teacher.frozen", "nada")),
               ("distillation_freezes_the_teacher",
                "distillation_restores_the_first_flag_everywhere")),
        Clause("La función no hace ``backward()`` ni cambia ningún valor: los parámetros de los "
               "dos modelos (sus valores y su ``.grad``, ``None`` o de antes) y ``x`` quedan "
               "como llegaron.",
               (("student.stale_grad", True), ("student.stale_grad", False)),
               ("distillation_calls_backward", "distillation_zero_grad_first")),
        Clause("Cada modelo puede llegar en ``train()``, en ``eval()`` o mezclado (un "
               "submódulo, también anidado, en otro modo que su padre): al terminar, cada "
               "submódulo está en el modo en que llegó.",
               (*(("teacher.modo", m) for m in MODES), ("student.modo", "mixto")),
               ("distillation_leaves_the_teacher_in_eval_mode",
                "distillation_teacher_eval_restores_the_root_mode")),
    ),
    "predict": (
        Clause("Devuelve ``softmax(model(x), dim=1)``: para cada muestra (fila), las "
               "probabilidades de sus K clases, que suman 1.",
               EVERY_CASE,
               ("predict_log_softmax", "predict_softmax_over_the_batch",
                "predict_returns_logits")),
        Clause("``x`` es un lote (N, D) y la salida tiene forma exactamente (N, K), también con "
               "N = 1 o K = 1 (con K = 1, una columna de unos).",
               (("x.N", 1), ("model.K", 1)),
               ("predict_squeezed",)),
        Clause("La salida tiene el dtype de ``x``, que es el del modelo: ``float32`` o "
               "``float64``.",
               (("x.dtype", "torch.float32"), ("x.dtype", "torch.float64")),
               ("predict_casts_to_float32",)),
        Clause("Durante la llamada ninguna operación se registra en un grafo ni se guarda "
               "ningún tensor para backward (un ``detach()`` al final llega tarde): la salida "
               "no tiene ``grad_fn`` y tiene ``requires_grad=False``.",
               EVERY_CASE,
               ("predict_with_tracking", "predict_bare_no_grad_statement",
                "predict_eval_mode_only", "predict_detach_at_the_end",
                "predict_own_hooks_then_detach")),
        Clause("``x`` puede requerir gradiente: sus valores, su ``requires_grad`` y su "
               "``.grad`` quedan como llegaron.",
               (("x.requires_grad", True),),
               ("predict_turns_off_x_requires_grad",)),
        Clause("Algunos parámetros pueden llegar congelados y con un ``.grad`` de antes: los "
               "valores, el ``requires_grad`` y el ``.grad`` de cada parámetro quedan como "
               "llegaron.",
               (("model.frozen", True), ("model.stale_grad", True)),
               ("predict_leaves_every_parameter_trainable",
                "predict_freezes_then_unfreezes_everything")),
        Clause("``model`` es una red de capas lineales y ReLU (sin Dropout ni BatchNorm), plana "
               "o con submódulos anidados, que llega en ``train()``, en ``eval()`` o mezclada "
               "(un submódulo, a cualquier profundidad, en otro modo que su padre): al "
               "terminar, cada submódulo está en el modo en que llegó.",
               (*(("model.modo", m) for m in MODES), ("model.nested", True)),
               ("predict_leaves_the_model_in_eval_mode", "predict_eval_then_train",
                "predict_restores_only_the_outer_mode", "predict_eval_only_if_training")),
        Clause("Quien llama puede estar dentro de ``torch.no_grad()`` o no: al terminar, el modo "
               "de autograd es el que tenía.",
               (("caller.grad_enabled", True), ("caller.grad_enabled", False)),
               ("predict_global_switch", "predict_switch_off_then_on")),
    ),
    "freeze_all_but_head": (
        Clause("``model`` es un ``nn.Module`` con un submódulo ``model.head`` (una capa o un "
               "bloque de varias): al terminar, cada parámetro de ``model.head`` tiene "
               "``requires_grad=True``.",
               (("model.head", "lineal"), ("model.head", "mlp"), ("model.head", "norma")),
               ("freeze_everything", "freeze_walking_the_modules")),
        Clause("La cabeza puede llegar congelada, entera o en parte: sale entrenable entera.",
               (("model.head_frozen", "todo"), ("model.head_frozen", "parte")),
               ("freeze_without_unfreezing_the_head",)),
        Clause("Todos los demás parámetros quedan con ``requires_grad=False``: pesos y sesgos "
               "de cualquier submódulo, anidado a cualquier profundidad, también los que ya "
               "llegan congelados.",
               (("model.frozen_outside_the_head", True), ("model.deep", True)),
               ("freeze_only_weights", "freeze_only_the_encoder_block", "freeze_with_no_grad",
                "freeze_the_modules_of_the_example")),
        Clause("También un parámetro que el modelo registra él mismo, fuera de cualquier "
               "submódulo (como ``model.escala``), queda congelado.",
               (("model.own_parameter", True),),
               ("freeze_by_children",)),
        Clause("La cabeza es ``model.head`` y solo ella: un módulo de nombre parecido "
               "(``heads_aux``, ``encoder.head_proj``), uno anidado que también se llama "
               "``head`` (``encoder.head``) o uno registrado después de la cabeza se congelan.",
               (("model.lookalikes", True),),
               ("freeze_by_prefix_without_the_dot", "freeze_by_substring",
                "freeze_by_substring_with_the_dot")),
        Clause("Devuelve los nombres completos de los parámetros que quedan entrenables, como "
               "los da ``model.named_parameters()`` (``\"head.weight\"``, no ``\"weight\"``).",
               EVERY_CASE,
               ("freeze_returns_the_frozen_names", "freeze_returns_names_relative_to_the_head")),
        Clause("Los devuelve en una lista, una tupla o un conjunto (``set``) de ``str``, en "
               "cualquier orden.",
               EVERY_CASE, ("freeze_returns_a_generator",)),
        Clause("Solo cambia ``requires_grad``: los valores y el ``.grad`` de cada parámetro "
               "quedan como llegaron (un ``.grad`` de antes se queda, también en los que "
               "congela).",
               (("model.stale_grad", True),),
               ("freeze_clears_the_grad_of_the_frozen",)),
        Clause("Cada módulo, la cabeza también, puede llegar en ``train()`` o en ``eval()`` y "
               "queda en el modo en que llegó: entrenable (``requires_grad``) no es modo "
               "``train()``.",
               (("model.head_training", False), ("model.head_training", True)),
               ("freeze_and_eval", "freeze_and_put_the_head_in_train_mode",
                "freeze_eval_then_train_the_head")),
    ),
}
