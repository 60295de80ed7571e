"""Chapter 3's contracts, clause by clause (``autograder.contract``): the docstrings show
them numbered; each names the hidden cases that check it and the variants that break it."""

from autograder.contract import EVERY_CASE, Clause

CLAUSES = {
    "micro_batch_weights": (
        Clause("``sizes`` es una lista o una tupla no vacía de enteros ``>= 1``: el número de "
               "muestras de cada micro-lote, que pueden ser distintos.",
               (("sizes.contenedor", "tuple"), ("sizes.distintos", True)),
               ("micro_batch_weights_edits_a_copy",)),
        Clause('``reduction`` es ``"mean"`` o ``"sum"``: cómo reduce la pérdida de cada '
               "micro-lote las de sus muestras, como el argumento ``reduction`` de "
               "``F.cross_entropy``. La pérdida de cada muestra depende solo de esa muestra.",
               (("reduction", "mean"), ("reduction", "sum")),
               ("micro_batch_weights_reductions_swapped",)),
        Clause('Con ``reduction="mean"``: tras ``(w_i * loss_i).backward()`` para cada '
               "micro-lote, sin borrar ``.grad`` entre ellos, ``.grad`` tiene el gradiente de "
               "la pérdida media de las N muestras, también con tamaños distintos.",
               (("reduction", "mean"), ("sizes.distintos", True)),
               ("micro_batch_weights_one_over_k",)),
        Clause('Con ``reduction="sum"``: lo mismo, el gradiente de la pérdida media de las '
               "N muestras (no el de su suma).",
               (("reduction", "sum"),),
               ("micro_batch_weights_sum_left_alone",)),
        Clause("Devuelve una lista (``list``) de ``float`` de Python, un peso por micro-lote "
               "y en el orden de ``sizes``.",
               EVERY_CASE, ("micro_batch_weights_as_a_tensor", "micro_batch_weights_as_a_tuple")),
        Clause("No cambia ``sizes``.", (("sizes.contenedor", "list"),),
               ("micro_batch_weights_in_the_callers_list",)),
    ),
    "train_with_accumulation": (
        Clause("Recorre ``batches`` en orden, en ciclos de ``accum`` micro-lotes consecutivos "
               "(``accum >= 1``), y da un ``optimizer.step()`` al final de cada ciclo: uno "
               "por ciclo.",
               (("accum", 1), ("batches.resto", True)),
               ("train_with_accumulation_steps_every_batch",)),
        Clause("Si ``len(batches)`` no es múltiplo de ``accum``, el último ciclo, incompleto, "
               "también da su paso; si ``accum > len(batches)``, ese es el único paso.",
               (("batches.resto", False), ("batches.accum>len", True)),
               ("train_with_accumulation_forgets_the_partial_cycle",)),
        Clause("Si ``len(batches)`` es múltiplo de ``accum``, no hay ciclo incompleto: ningún "
               "paso de más al final.",
               (("batches.resto", True),),
               ("train_with_accumulation_always_an_extra_step",
                "train_with_accumulation_unguarded_leftover")),
        Clause("La pérdida de cada micro-lote se divide por el número de micro-lotes de **su** "
               "ciclo: cada paso usa el gradiente medio de su ciclo, con todos sus "
               "micro-lotes.",
               EVERY_CASE,
               ("train_with_accumulation_without_dividing",
                "train_with_accumulation_zeroes_every_micro_batch",
                "train_with_accumulation_partial_divisor_one_too_early")),
        Clause("En el ciclo final incompleto, ese número es el de micro-lotes que tiene, no "
               "``accum``.",
               (("batches.resto", False),),
               ("train_with_accumulation_partial_cycle_over_accum",)),
        Clause("Ningún paso ve los gradientes de otro ciclo.",
               EVERY_CASE, ("train_with_accumulation_without_zero_grad",)),
        Clause("Al llamar, ``.grad`` puede traer restos de un paso anterior: el primer paso no "
               "los ve. Lo que quede en ``.grad`` al terminar no importa.",
               (("model.grad_previo", True),),
               ("train_with_accumulation_zero_grad_only_after_steps",)),
        Clause("``loss_fn(model(x), y)`` es la pérdida media del micro-lote, un tensor de "
               "dimensión 0; ``loss_fn`` puede ser un módulo de ``torch.nn`` o una función.",
               (("loss_fn", "function"),),
               ("train_with_accumulation_moves_the_loss_to_the_device",)),
        Clause("Cada micro-lote pasa por el modelo una sola vez y por separado (con BatchNorm, "
               "sus estadísticas acumuladas se actualizan una vez por micro-lote, en orden).",
               (("model.batchnorm", "train"),),
               ("train_with_accumulation_joins_the_cycle",
                "train_with_accumulation_second_forward_for_the_log")),
        Clause("Entrena con cada submódulo en el modo en que llega: uno en ``eval`` (un "
               "BatchNorm, por ejemplo) se usa en ``eval``.",
               (("model.batchnorm", "eval"),),
               ("train_with_accumulation_trains_in_train_mode",
                "train_with_accumulation_sets_training_mode")),
        Clause("``model`` puede ser plano o tener submódulos anidados, y llegar entero en "
               "``train``, entero en ``eval`` o mezclado (un submódulo en otro modo que su "
               "padre): al terminar, cada submódulo está en el modo en que llegó.",
               (("model.modo", "mixto"), ("model.modo", "mixto_eval"), ("model.anidado", True)),
               ("train_with_accumulation_restores_the_root_mode_only",)),
        Clause("El optimizador puede ser cualquiera (SGD con o sin momento, Adam...), traer "
               "estado de pasos anteriores y tener varios grupos de parámetros, cada uno con "
               "su ``lr``: solo sus ``step()`` cambian los parámetros.",
               (("optimizer.grupos", 2), ("optimizer.con_estado", True),
                ("optimizer.tipo", "Adam")),
               ("train_with_accumulation_zeroes_the_first_group",)),
        Clause("No cambia ``batches`` (ni la lista ni sus tensores), ``loss_fn`` ni la "
               "configuración del optimizador (``lr``, momento... de cada grupo).",
               EVERY_CASE, ("train_with_accumulation_pops_the_batches",)),
        Clause("No cambia el ``requires_grad`` de ningún parámetro: uno congelado "
               "(``requires_grad=False``, fuera del optimizador) sigue congelado.",
               (("model.congelado", True),), ("train_with_accumulation_unfreezes",)),
        Clause("Puede llamarse con autograd desactivado (dentro de ``torch.no_grad()``): "
               "entrena igual y deja el modo de autograd como estaba.",
               (("model.llamante_sin_grad", True),),
               ("train_with_accumulation_grad_on_for_good",
                "train_with_accumulation_assumes_grad_on")),
        Clause("Devuelve una lista (``list``) con un ``float`` de Python por paso: la media de "
               "las pérdidas, sin dividir, de los micro-lotes de su ciclo.",
               EVERY_CASE,
               ("train_with_accumulation_logs_the_divided_losses",
                "train_with_accumulation_logs_tensors",
                "train_with_accumulation_logs_every_micro_batch",
                "train_with_accumulation_returns_a_tuple")),
    ),
    "clip_by_global_norm": (
        Clause("``grads`` es una lista, una tupla o un generador, que solo se puede recorrer "
               "una vez.",
               (("grads.contenedor", "tuple"), ("grads.contenedor", "generator")),
               ("clip_by_global_norm_two_passes",)),
        Clause("Cada elemento de ``grads`` es un tensor de cualquier forma (también de "
               "dimensión 0), todos ``float32`` o todos ``float64``, o ``None`` (un parámetro "
               "sin gradiente).",
               (("grads.dim0", True), ("grads.dtype", "torch.float32"),
                ("grads.dtype", "torch.float64")),
               ("clip_by_global_norm_iterates_rows",)),
        Clause("Un ``None`` no cuenta en la norma y sigue siendo ``None``, en su sitio, en la "
               "lista devuelta.",
               (("grads.con_none", True),),
               ("clip_by_global_norm_drops_none", "clip_by_global_norm_assumes_no_none")),
        Clause("``grads`` puede estar vacía o tener solo ``None``: la norma es entonces 0 y "
               "la lista devuelta es la de esos ``None``.",
               (("grads.vacia", True), ("grads.solo_none", True)),
               ("clip_by_global_norm_stacks_without_a_guard",)),
        Clause("La norma total es la norma L2 de todos los tensores juntos, como si fueran un "
               "único vector.",
               EVERY_CASE,
               ("clip_by_global_norm_l1", "clip_by_global_norm_adds_the_norms")),
        Clause("Cada tensor se multiplica por el mismo factor, "
               "``min(1, max_norm / (norma + 1e-6))``.",
               EVERY_CASE,
               ("clip_by_global_norm_per_tensor", "clip_by_global_norm_by_value",
                "clip_by_global_norm_forgets_to_scale")),
        Clause("El ``1e-6`` del factor cuenta: con una norma pequeña, ``max_norm / norma`` no "
               "es el factor.",
               (("grads.norma_pequena", True),), ("clip_by_global_norm_without_eps",)),
        Clause("Si ``norma + 1e-6 <= max_norm``, el factor es 1: nada cambia (recortar nunca "
               "agranda).",
               (("max_norm.recorta", False),), ("clip_by_global_norm_always",)),
        Clause("Si ``max_norm`` pasa de la norma pero no de ``norma + 1e-6``, el factor ya es "
               "menor que 1: recorta.",
               (("max_norm.entre", True),), ("clip_by_global_norm_threshold_on_the_norm",)),
        Clause('``max_norm > 0``, y puede ser ``float("inf")``: entonces nunca recorta.',
               (("max_norm.inf", True),), ("clip_by_global_norm_divides_by_the_larger",)),
        Clause("Devuelve una tupla ``(recortados, norma)``: ``recortados`` es una lista "
               "(``list``) con un elemento por cada uno de ``grads``, en el mismo orden.",
               EVERY_CASE,
               ("clip_by_global_norm_returns_only_the_list",
                "clip_by_global_norm_returns_a_tuple_of_grads")),
        Clause("Cada tensor recortado tiene la forma y el dtype del suyo: uno ``float32`` de "
               "dimensión 0 sigue siendo ``float32``.",
               (("grads.dim0_float32", True),), ("clip_by_global_norm_float64_factor",)),
        Clause("``norma`` es la norma total **antes** del recorte, como ``float`` de Python (se "
               "acepta un tensor de dimensión 0).",
               EVERY_CASE, ("clip_by_global_norm_returns_the_clipped_norm",)),
        Clause("No modifica los tensores de ``grads``; si nada cambia, puede devolver esos "
               "mismos tensores.",
               EVERY_CASE, ("clip_by_global_norm_in_place",)),
    ),
}
