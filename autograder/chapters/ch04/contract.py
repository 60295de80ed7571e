"""Chapter 4's contracts, clause by clause (``autograder.contract``): the docstrings show
them numbered; each names the hidden cases that check it and the variants that break it."""

from autograder.contract import EVERY_CASE, Clause

CLAUSES = {
    "evaluate": (
        Clause("``loader`` es un iterable de lotes ``(x, y)``: una lista, una tupla o uno que "
               "solo se puede recorrer una vez (como un generador).",
               (("loader.tipo", "tuple"), ("loader.tipo", "UnaPasada")),
               ("evaluate_iterates_the_loader_twice",)),
        Clause("``y`` tiene forma ``(B,)``, con el índice de la clase de cada muestra; los "
               "lotes pueden tener tamaños distintos, también de una sola muestra.",
               (("loader.una_muestra", True),), ("evaluate_squeezes_the_labels",)),
        Clause("``loss_fn(logits, y)`` es la pérdida media de un lote (un tensor de dimensión "
               "0) y recibe los logits crudos; puede ser cualquier pérdida de ``torch.nn`` o "
               "una función sin ``reduction``: se usa esa, tal cual.",
               (("loss_fn", ("MultiMarginLoss", None)), ("loss_fn", ("function", None))),
               ("evaluate_hard_coded_cross_entropy", "evaluate_softmax_before_the_loss",
                "evaluate_switches_to_sum_reduction")),
        Clause("La pérdida devuelta es la media sobre todas las muestras: cada lote pesa según "
               "su número de muestras (no es la media de las medias de los lotes).",
               (("loader.smaller_last", True),), ("evaluate_mean_of_batch_means",)),
        Clause("La exactitud es la fracción de las muestras en que el ``argmax`` de los logits "
               "(``dim=1``) es ``y``: un número en [0, 1].",
               EVERY_CASE, ("evaluate_counts_correct", "evaluate_divides_by_batches")),
        Clause("Devuelve una tupla ``(loss, accuracy)`` de dos ``float`` de Python.",
               EVERY_CASE, ("evaluate_returns_tensors",)),
        Clause("Cada pase hacia adelante se hace con todos los submódulos en modo evaluación, "
               "a cualquier profundidad: ``model`` puede tener BatchNorm, Dropout y submódulos "
               "anidados en varios niveles.",
               (("model.profundidad", 3),),
               ("evaluate_without_eval", "evaluate_evals_the_top_level_layers_only")),
        Clause("Ningún pase construye grafo: se evalúa con autograd desactivado, también si "
               "quien llama lo tiene activado.",
               (("model.caller_no_grad", False),), ("evaluate_without_no_grad",)),
        Clause("Puede llamarse dentro de ``torch.no_grad()`` o fuera: al terminar, el modo de "
               "autograd de quien llama es el que era.",
               (("model.caller_no_grad", True), ("model.caller_no_grad", False)),
               ("evaluate_leaves_autograd_off", "evaluate_forces_grad_on")),
        Clause("``model`` llega con todos sus submódulos en modo entrenamiento o todos en modo "
               "evaluación; al terminar, cada submódulo está en el modo en que llegó.",
               (("model.mode", True), ("model.mode", False)),
               ("evaluate_leaves_eval_mode", "evaluate_always_back_to_train",
                "evaluate_restores_the_flag_only")),
        Clause("No cambia las estadísticas de BatchNorm, los parámetros ni sus ``.grad`` (que "
               "pueden traer valores), los ajustes de ``loss_fn`` ni los lotes.",
               (("model.stale_grad", True),),
               ("evaluate_zeroes_the_gradients", "evaluate_leaves_sum_reduction")),
    ),
    "warmup_cosine": (
        Clause("``lr`` es la tasa que tienen los grupos de ``optimizer`` al crear el "
               "planificador (la de ``param_groups``, no la de ``optimizer.defaults`` ni la "
               "del ejemplo). El optimizador no ha tenido otro planificador: ningún grupo "
               "trae ``initial_lr``.",
               (("optimizer.defaults_lr", False),),
               ("warmup_cosine_example_lr", "warmup_cosine_defaults_lr")),
        Clause("Con ``W = warmup_steps >= 1`` (también ``W = 1``), tras ``t < W`` llamadas a "
               "``scheduler.step()`` la tasa es ``lr * (t + 1) / (W + 1)``: sube en línea "
               "recta y no empieza en ``lr``.",
               (("warmup_steps", 1),),
               ("warmup_cosine_start_factor_one_over_w", "warmup_cosine_cosine_only")),
        Clause("Con ``T = total_steps > W`` (también ``T = W + 1``) y ``W <= t <= T``, la tasa "
               "es ``min_lr + (lr - min_lr) * (1 + cos(pi * (t - W) / (T - W))) / 2``: "
               "``lr`` en ``t = W`` y ``min_lr`` en ``t = T``.",
               (("total_steps.cosine", 1),),
               ("warmup_cosine_t_max_total", "warmup_cosine_without_eta_min",
                "warmup_cosine_min_lr_as_a_factor", "warmup_cosine_min_lr_default_ignored")),
        Clause("``min_lr`` es opcional (0 si se omite) y ``0 <= min_lr < lr``.",
               (("min_lr", None),), ("warmup_cosine_default_min_lr_not_zero",)),
        Clause("Si el optimizador tiene varios grupos de parámetros (todos con la misma "
               "``lr``; sus demás ajustes pueden diferir), la curva se aplica a cada grupo.",
               (("optimizer.param_groups", 2),), ("warmup_cosine_first_group_only",)),
        Clause("Crearlo no da ningún paso: antes del primer ``scheduler.step()`` la tasa es "
               "``lr / (W + 1)``.",
               (("warmup_steps.varios", True),), ("warmup_cosine_steps_when_created",)),
        Clause("Devuelve un planificador de ``torch.optim.lr_scheduler`` (una instancia de "
               "``LRScheduler``: ``LambdaLR``, ``SequentialLR``, una subclase propia...) ya "
               "creado sobre ``optimizer``, que guarda su estado con ``state_dict()``.",
               EVERY_CASE,
               ("warmup_cosine_returns_the_lrs", "warmup_cosine_hand_written_class")),
        Clause("Crearlo solo cambia ``lr`` (e ``initial_lr``) de los grupos: no toca los "
               "parámetros ni los demás ajustes del optimizador.",
               EVERY_CASE, ("warmup_cosine_stores_min_lr_in_the_groups",)),
    ),
    "train_one_epoch": (
        Clause("``loader`` es un iterable con ``len()`` (su número de micro-lotes): una lista, "
               "una tupla o uno que no se puede indexar ni cortar (como un ``DataLoader``).",
               (("loader.kind", "Cargador"), ("loader.kind", "tuple")),
               ("train_one_epoch_slices_the_loader",)),
        Clause("Pone todos los submódulos en modo entrenamiento y los deja así: ``model`` puede "
               "llegar en modo evaluación, entero o en parte (un hijo en ``eval`` bajo un padre "
               "en ``train``, o al revés).",
               (("model.start_mode", "eval"), ("model.start_mode", "mixto"),
                ("model.start_mode", "mixto_eval")),
               ("train_one_epoch_without_model_train", "train_one_epoch_trains_only_if_in_eval",
                "train_one_epoch_sets_the_flag_only")),
        Clause("Agrupa los micro-lotes en ciclos consecutivos de ``accum`` (``accum >= 1``, 1 "
               "si se omite) y da un ``optimizer.step()`` al final de cada ciclo: uno por "
               "ciclo.",
               (("accum", "omitido"), ("accum", 2), ("accum", 3)),
               ("train_one_epoch_steps_every_micro_batch",)),
        Clause("Si ``len(loader)`` no es múltiplo de ``accum``, el último ciclo, incompleto, "
               "también da su paso; ``accum`` puede ser mayor que el número de micro-lotes.",
               (("accum.partial_cycle", True), ("accum.more_than_batches", True)),
               ("train_one_epoch_drops_partial_cycle",)),
        Clause("La pérdida de cada micro-lote se divide por el número de micro-lotes de **su** "
               "ciclo antes de ``backward()``: ``accum`` en un ciclo completo; en el último, si "
               "está incompleto, los que tiene (``len(loader) % accum``).",
               (("accum.partial_cycle", True),),
               ("train_one_epoch_not_divided", "train_one_epoch_partial_cycle_divided_by_accum")),
        Clause("En cada paso, en este orden: ``torch.nn.utils.clip_grad_norm_(model.parameters(), "
               "max_norm)`` si ``max_norm`` no es ``None``, ``optimizer.step()`` y "
               "``scheduler.step()`` si hay planificador.",
               EVERY_CASE,
               ("train_one_epoch_scheduler_first", "train_one_epoch_clips_after_step")),
        Clause("``max_norm`` es ``None`` (si se omite: sin recorte) o un número ``>= 0``; "
               "``0.0`` es un valor, no ``None``: recorta los gradientes a norma 0.",
               (("max_norm", 0.0), ("max_norm", "omitido")),
               ("train_one_epoch_clips_if_max_norm_truthy",)),
        Clause("``scheduler`` (``None`` si se omite) avanza una vez por paso del optimizador: "
               "ni una vez por micro-lote ni una por época.",
               (("scheduler", "CosineAnnealingLR"),),
               ("train_one_epoch_scheduler_every_micro_batch",
                "train_one_epoch_scheduler_once_per_epoch")),
        Clause("Los ``.grad`` llegan a cero o a ``None``; se ponen a cero entre un ciclo y el "
               "siguiente, nunca entre dos micro-lotes del mismo ciclo (cómo quedan al terminar "
               "no importa).",
               (("model.grad", True), ("model.grad", False)),
               ("train_one_epoch_without_zero_grad",
                "train_one_epoch_zero_grad_every_micro_batch")),
        Clause("Devuelve un ``float`` de Python: la media de las pérdidas **sin dividir** de "
               "todos los micro-lotes, una por micro-lote, sin ponderar por su tamaño (el "
               "último puede ser más corto).",
               (("loader.smaller_last", True),),
               ("train_one_epoch_weighted_by_samples", "train_one_epoch_logs_the_divided_loss",
                "train_one_epoch_mean_of_cycle_means", "train_one_epoch_logs_the_tensor")),
        Clause("``loss_fn(model(x), y)`` es la pérdida media del micro-lote (un tensor de "
               "dimensión 0); puede ser un módulo de ``torch.nn`` o una función sin "
               "``reduction``: se usa tal cual.",
               (("loss_fn", "function"),), ("train_one_epoch_sums_then_divides",)),
        Clause("No cambia el ``requires_grad`` de ningún parámetro: uno congelado "
               "(``requires_grad=False``) sigue congelado y sin entrenar.",
               (("model.congelado", True),), ("train_one_epoch_unfreezes",)),
        Clause("No cambia los ajustes de ``loss_fn`` ni los del optimizador (salvo la ``lr`` "
               "que mueve el planificador), ni los micro-lotes.",
               EVERY_CASE, ("train_one_epoch_leaves_sum_reduction",)),
    ),
    "train_steps": (
        Clause("Sin ``state``, empieza en el paso 0 con los objetos como llegan y el generador "
               "global como esté. El paso ``t`` usa ``batches[t]``: ``loss_fn(model(x), y)``, "
               "``backward()``, ``optimizer.step()``, ``scheduler.step()`` y gradientes a cero.",
               EVERY_CASE, ("train_steps_scheduler_before_the_step",)),
        Clause("Entrena hasta el paso ``stop - 1``: ``batches`` puede tener más lotes de los "
               "que tocan. Al reanudar, ``stop`` es mayor que el paso en que se quedó la "
               "llamada anterior.",
               (("batches.beyond_stop", True),), ("train_steps_every_batch",)),
        Clause("Devuelve ``state``, un diccionario que ``torch.save`` guarda y "
               "``torch.load(..., weights_only=True)`` carga: tensores, números, cadenas, "
               "listas, tuplas y diccionarios.",
               EVERY_CASE, ("train_steps_saves_the_objects", "train_steps_forgets_return")),
        Clause("``state`` es una instantánea: si quien llama sigue entrenando con los mismos "
               "objetos, el ``state`` que ya tiene no cambia.",
               EVERY_CASE, ("train_steps_live_state_dicts",)),
        Clause("Con ``state`` (lo que devolvió la llamada anterior), los objetos llegan recién "
               "creados, con otros pesos: antes del primer paso el modelo recupera los pesos "
               "con que terminó la llamada anterior.",
               EVERY_CASE,
               ("train_steps_without_model", "train_steps_snapshot_before_training")),
        Clause("El optimizador recupera su estado (momento o momentos de Adam, su contador "
               "``step`` y la ``lr`` de cada grupo).",
               (("optimizer", "SGD"), ("optimizer", "AdamW")),
               ("train_steps_without_optimizer",)),
        Clause("El planificador recupera todo su estado (``last_epoch`` y lo demás, también el "
               "de uno compuesto como ``SequentialLR``).",
               (("scheduler", "SequentialLR"), ("scheduler", "LambdaLR")),
               ("train_steps_without_scheduler", "train_steps_sets_last_epoch")),
        Clause("El generador aleatorio global (el de Dropout) vuelve al estado en que lo dejó "
               "la llamada anterior al terminar, esté como esté al llamar.",
               EVERY_CASE,
               ("train_steps_without_rng", "train_steps_reseeds_instead",
                "train_steps_rng_read_before_training")),
        Clause("Sigue desde el paso en que se quedó la llamada anterior, también tras varias "
               "interrupciones seguidas: reanudar da lo mismo, bit a bit, que no interrumpir.",
               (("stop.interruptions", 2),),
               ("train_steps_restarts_the_batches", "train_steps_counts_steps_of_the_call")),
    ),
}
