"""Chapter 5's contracts, clause by clause (``autograder.contract``): the docstrings show
them numbered; each names the hidden cases that check it and the variants that break it."""

from autograder.contract import EVERY_CASE, Clause

CLAUSES = {
    "evaluation_mode": (
        Clause("``evaluation_mode(model)`` devuelve un gestor de contexto: se usa como "
               "``with evaluation_mode(model) as m:``.",
               EVERY_CASE, ("evaluation_mode_without_the_decorator",
                            "evaluation_mode_returns_the_model")),
        Clause("El ``as`` recibe el mismo objeto ``model``, no una copia ni ``None``.",
               EVERY_CASE, ("evaluation_mode_yields_nothing",)),
        Clause("El gestor hace su trabajo al abrir el bloque (al entrar en el ``with``), no al "
               "llamar a ``evaluation_mode(model)``: puede crearse antes, con otro modo de "
               "autograd, y abrirse después.",
               EVERY_CASE, ("evaluation_mode_class_reads_grad_at_init",)),
        Clause("Dentro del bloque, todos los módulos de ``model`` están en modo evaluación "
               "(``training`` es False): la raíz, los contenedores y cada hoja, a cualquier "
               "profundidad y de cualquier tipo, módulos propios incluidos.",
               (("model.ruido_activo", True), ("model.profundidad", 5)),
               ("evaluation_mode_dropout_and_batchnorm_only",
                "evaluation_mode_leaves_only")),
        Clause("Dentro del bloque, autograd está desactivado (``torch.is_grad_enabled()`` es "
               "False), también en un bloque anidado.",
               EVERY_CASE, ("evaluation_mode_without_no_grad",
                            "evaluation_mode_no_grad_around_the_setup")),
        Clause("Al salir, cada módulo recupera el modo exacto que tenía al entrar, módulo a "
               "módulo: también una BatchNorm congelada bajo un bloque en entrenamiento, un "
               "hijo en entrenamiento bajo un padre en evaluación, una raíz en evaluación o un "
               "contenedor en otro modo que la raíz, a cualquier profundidad (no solo la de "
               "los ejemplos).",
               (("model.modos", "mixto"), ("model.nieto_con_otro_modo", True),
                ("model.train_bajo_eval", True), ("model.raiz", False),
                ("model.contenedor_con_otro_modo", True), ("model.profundidad", 5)),
               ("evaluation_mode_back_to_train", "evaluation_mode_restores_the_root_flag_only",
                "evaluation_mode_restores_direct_children_only",
                "evaluation_mode_restores_children_first", "evaluation_mode_never_restores",
                "evaluation_mode_refreezes_the_eval_ones",
                "evaluation_mode_restores_two_levels", "evaluation_mode_restores_to_depth_three",
                "evaluation_mode_restores_root_and_leaves")),
        Clause("Si el código del bloque lanza una excepción, de cualquier clase (también una "
               "que no hereda de ``Exception``, como ``KeyboardInterrupt``), también restaura "
               "al salir los modos y el modo de autograd.",
               EVERY_CASE, ("evaluation_mode_restores_only_on_success",
                            "evaluation_mode_grad_statements_without_finally",
                            "evaluation_mode_restores_in_except_exception")),
        Clause("No silencia la excepción del bloque, sea de la clase que sea: sigue su camino "
               "hacia quien ejecuta el ``with``.",
               EVERY_CASE, ("evaluation_mode_swallows_errors",)),
        Clause("Al salir, autograd vuelve al modo de quien abrió el bloque: activado, o "
               "desactivado si lo abrió dentro de ``torch.no_grad()``.",
               (("llamada.grad", True), ("llamada.grad", False)),
               ("evaluation_mode_grad_on_at_exit", "evaluation_mode_grad_never_restored")),
        Clause("Se puede anidar: un bloque interior deja los modos y autograd como los puso el "
               "exterior, y el exterior los deja como estaban al entrar.",
               EVERY_CASE, ("evaluation_mode_saves_on_the_model",)),
        Clause("No cambia nada más: ni los parámetros (valores, ``requires_grad``, también "
               "los congelados, ``.grad``) ni los búferes (las estadísticas de BatchNorm).",
               (("model.grad", True), ("model.congelados", True)),
               ("evaluation_mode_zeroes_the_gradients", "evaluation_mode_unfreezes_all")),
    ),
    "modules_that_change": (
        Clause("``model`` es un ``nn.Module`` con submódulos anidados a cualquier profundidad, "
               "en cualquier combinación de modos; ``x`` tiene forma (N, D) con N ≥ 2, en "
               "float32 o float64 como el modelo.",
               (("x.N=2", True), ("x.dtype", "torch.float64")),
               ("modules_that_change_probes_with_fresh_noise",)),
        Clause("Una hoja es un módulo sin hijos, a cualquier profundidad. Solo se listan "
               "hojas: nunca un contenedor.",
               (("model.profundidad", 3),),
               ("modules_that_change_including_containers",
                "modules_that_change_direct_children_only")),
        Clause("Cada hoja se ejecuta en modo entrenamiento y en modo evaluación sobre una misma "
               "entrada: la que recibe durante ``model(x)`` con todo el modelo en modo "
               "evaluación.",
               (("model.entrada_segun_modo", True),),
               ("modules_that_change_two_whole_passes",
                "modules_that_change_inputs_in_the_arriving_mode")),
        Clause("Se comparan las salidas de la propia hoja, no la del modelo: también cambia "
               "una hoja cuya salida el modelo no usa (una rama auxiliar).",
               (("model.rama_auxiliar", True),),
               ("modules_that_change_one_leaf_at_a_time_model_output",)),
        Clause("Se lista una hoja si esas dos salidas difieren en algo, por poco que sea: "
               "comparación exacta, como ``torch.equal``.",
               (("model.cambio_diminuto", True),),
               ("modules_that_change_within_allclose", "modules_that_change_compares_means")),
        Clause("Se mide, no se deduce del tipo: ``Dropout(p=0)`` y una BatchNorm con "
               "``track_running_stats=False`` no se listan.",
               EVERY_CASE, ("modules_that_change_by_type",)),
        Clause("Un módulo propio que lee ``self.training`` se lista si su salida cambia.",
               EVERY_CASE, ("modules_that_change_by_type_and_settings",)),
        Clause("Las hojas que ``model(x)`` no ejecuta no se listan.",
               (("model.hoja_sin_ejecutar", True),),
               ("modules_that_change_by_type_settings_and_custom_layers",)),
        Clause("Devuelve una lista o una tupla de ``str``, los nombres de "
               "``model.named_modules()``, cada uno una vez y en cualquier orden.",
               EVERY_CASE, ("modules_that_change_returns_the_modules",)),
        Clause("Todo sin grafo: el pase del modelo y cada ejecución de una hoja, con autograd "
               "desactivado.",
               EVERY_CASE, ("modules_that_change_with_grad_on",)),
        Clause("Al volver, cada módulo está en el modo exacto que tenía al llamar, también con "
               "la raíz en evaluación, un hijo en entrenamiento bajo un padre en evaluación o "
               "un contenedor en otro modo que la raíz.",
               (("model.modos", "mixto"), ("model.train_bajo_eval", True),
                ("model.contenedor_con_otro_modo", True)),
               ("modules_that_change_left_in_eval",
                "modules_that_change_restores_the_root_flag_only",
                "modules_that_change_restores_root_and_leaves")),
        Clause("No cambia los búferes (en modo entrenamiento una BatchNorm mueve sus "
               "estadísticas: mide sobre copias o restáuralas) ni los parámetros (valores, "
               "``requires_grad``, también los congelados, ``.grad``).",
               (("model.congelados", True), ("model.grad", True)),
               ("modules_that_change_without_restoring_buffers",
                "modules_that_change_unfreezes_all")),
        Clause("Deja los ganchos (hooks) del modelo como estaban: no deja registrado ninguno "
               "suyo y conserva los que quien llama ya tenía.",
               (("model.ganchos_previos", True),),
               ("modules_that_change_leaves_its_hooks", "modules_that_change_clears_all_hooks")),
        Clause("No cambia ``x`` (valores y ``requires_grad``) ni el modo de autograd de quien "
               "llama, que puede estar dentro de ``torch.no_grad()``.",
               (("x.requires_grad", True), ("llamada.grad", True)),
               ("modules_that_change_detaches_x_in_place",
                "modules_that_change_grad_statement")),
    ),
    "mc_dropout": (
        Clause("Mientras muestrea, cada módulo ``nn.Dropout`` está en modo entrenamiento (estos "
               "modelos no tienen otras clases de dropout).",
               (("model.dropouts", 2),), ("mc_dropout_whole_model_in_eval",)),
        Clause("Mientras muestrea, cada BatchNorm está en modo evaluación: normaliza con sus "
               "estadísticas acumuladas y no las cambia.",
               (("model.modos", "train"),), ("mc_dropout_whole_model_in_train",)),
        Clause("Mientras muestrea, todo lo que no es ``nn.Dropout`` está en modo evaluación: "
               "también los módulos propios que leen ``self.training`` y los contenedores.",
               (("model.ruido_activo", True), ("model.raiz", True)),
               ("mc_dropout_train_then_freeze_batchnorm", "mc_dropout_leaves_to_eval_only")),
        Clause("Mientras muestrea, autograd está desactivado.",
               EVERY_CASE, ("mc_dropout_without_no_grad",)),
        Clause("Llama a ``model(x)`` exactamente ``n_samples`` veces seguidas (``n_samples`` "
               "≥ 2), sobre ``x`` entero: sin pases de más ni lotes repetidos.",
               (("n_samples", 2),),
               ("mc_dropout_one_batched_pass", "mc_dropout_warm_up_pass")),
        Clause("No hace ningún otro sorteo aleatorio ni vuelve a fijar la semilla (tampoco "
               "con la de quien llama): sigue el generador tal como lo recibe, así que con la "
               "semilla que fija quien llama el resultado queda determinado.",
               EVERY_CASE, ("mc_dropout_reseeds", "mc_dropout_fresh_seed",
                            "mc_dropout_reseeds_with_the_callers_seed")),
        Clause("Devuelve ``(media, desviacion)`` (tupla o lista): dos tensores con la forma y "
               "el dtype de ``model(x)``, también con N = 1 o en float64.",
               (("x.N", 1), ("x.dtype", "torch.float64")),
               ("mc_dropout_squeezes", "mc_dropout_float32_buffer")),
        Clause("``media`` es la media por elemento de las ``n_samples`` salidas (divide por "
               "``n_samples``).",
               EVERY_CASE, ("mc_dropout_mean_divides_by_n_minus_1",)),
        Clause("``desviacion`` es su desviación típica por elemento con corrección de Bessel "
               "(divide por ``n_samples − 1``, como ``torch.std``), no la varianza.",
               EVERY_CASE, ("mc_dropout_biased_std", "mc_dropout_returns_the_variance")),
        Clause("Al volver, cada módulo está en el modo exacto que tenía al llamar, también con "
               "la raíz en evaluación, un hijo en entrenamiento bajo un padre en evaluación o "
               "un contenedor en otro modo que la raíz.",
               (("model.modos", "mixto"), ("model.train_bajo_eval", True),
                ("model.contenedor_con_otro_modo", True)),
               ("mc_dropout_not_restored", "mc_dropout_restores_the_root_flag_only",
                "mc_dropout_refreezes_the_eval_ones", "mc_dropout_restores_root_and_leaves")),
        Clause("No cambia los parámetros (valores, ``requires_grad``, también los congelados, "
               "``.grad``), los búferes de BatchNorm, ``x`` ni el modo de autograd de quien "
               "llama.",
               (("model.congelados", True), ("llamada.grad", True)),
               ("mc_dropout_unfreezes_all", "mc_dropout_grad_statement")),
    ),
}
