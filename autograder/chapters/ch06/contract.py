"""Chapter 6's contracts, clause by clause (``autograder.contract``): the docstrings show
them numbered; each names the hidden cases that check it and the variants that break it."""

from autograder.contract import EVERY_CASE, Clause

CLAUSES = {
    "amp_accumulation_steps": (
        Clause("El pase hacia adelante de cada micro-lote corre bajo ``torch.autocast`` del "
               "tipo de dispositivo ``device`` y en el ``dtype`` que recibe la función. La "
               "pérdida puede calcularse dentro del mismo bloque o fuera de él.",
               EVERY_CASE, ("amp_accumulation_steps_without_autocast",
                            "amp_accumulation_steps_autocast_default_dtype")),
        Clause("Los micro-lotes van en ciclos de ``accum`` consecutivos; cada ciclo da un paso "
               "del optimizador con la media (no la suma) de los gradientes de sus micro-lotes.",
               EVERY_CASE, ("amp_accumulation_steps_without_dividing",)),
        Clause("Si el último ciclo está incompleto (también si es el único), su paso usa la "
               "media de los micro-lotes que tiene, no la división por ``accum``.",
               (("accum.last cycle", "incomplete"), ("accum.last cycle", "shorter than accum")),
               ("amp_accumulation_steps_last_cycle_by_accum",)),
        Clause("Los gradientes se vacían al empezar cada ciclo y solo entonces: lo que ``.grad`` "
               "traía al llamar a la función no cuenta, y nada se borra a mitad de ciclo.",
               (("model.grad", False),),
               ("amp_accumulation_steps_zero_grad_every_micro_batch",
                "amp_accumulation_steps_zero_grad_only_after_the_step")),
        Clause("El gradiente del paso se recorta a ``max_norm`` en la escala real: con "
               "``scaler``, después de ``scaler.unscale_``.",
               (("max_norm", True),), ("amp_accumulation_steps_clips_scaled_gradients",)),
        Clause("Con ``scaler``, el paso lo da ``scaler.step(optimizer)``: un paso con inf o "
               "NaN en los gradientes se salta sin cambiar los parámetros.",
               (("scaler", False),), ("amp_accumulation_steps_calls_optimizer_step",)),
        Clause("Con ``scaler``, ``unscale_`` y ``update()`` corren una vez por paso del "
               "optimizador (saltado o no): la escala cambia según la regla del escalador y "
               "nunca a mitad de ciclo.",
               (("scaler", False),), ("amp_accumulation_steps_updates_every_micro_batch",
                                      "amp_accumulation_steps_unscales_every_micro_batch")),
        Clause("Los parámetros siguen en float32 (los pesos maestros): el modelo no se "
               "convierte a 16 bits.",
               EVERY_CASE, ("amp_accumulation_steps_casts_the_model",)),
        Clause("Devuelve una lista de floats de Python, uno por paso del optimizador (saltado "
               "o no): la pérdida media del ciclo, sin escalar.",
               EVERY_CASE, ("amp_accumulation_steps_returns_scaled_losses",)),
        Clause("El modo train/eval de cada submódulo queda como estaba, también el de un "
               "modelo en modo evaluación: la raíz y cada submódulo.",
               (("model.training", False),),
               ("amp_accumulation_steps_sets_train_mode",
                "amp_accumulation_steps_restores_the_root_flag_only")),
        Clause("Solo cambian los parámetros, sus ``.grad``, el estado del optimizador y la "
               "escala del ``scaler``: el modo de autograd, la lista de micro-lotes y sus "
               "tensores, la pérdida y la configuración del optimizador y del ``scaler`` "
               "quedan como estaban.",
               EVERY_CASE, ("amp_accumulation_steps_consumes_the_batches",
                            "amp_accumulation_steps_switches_the_loss_to_a_sum",
                            "amp_accumulation_steps_leaves_autograd_off")),
    ),
    "diagnose_amp_log": (
        Clause("Devuelve un texto, exactamente una de las cinco etiquetas: ``\"ok\"``, "
               "``\"clip_before_unscale\"``, ``\"new_scaler_each_step\"``, "
               "``\"optimizer_step\"`` o ``\"scaled_loss\"``.",
               EVERY_CASE, ("diagnose_amp_log_describes_the_call",)),
        Clause("``\"ok\"``: el bucle es correcto. También un bucle correcto tiene pasos cuyos "
               "gradientes desbordan: cada registro, de cualquier etiqueta, tiene al menos uno, "
               "y la escala se lee antes de ``scaler.step``. Si la escala empieza muy alta, "
               "baja varias veces seguidas antes del primer paso.",
               EVERY_CASE, ("diagnose_amp_log_every_inf_is_a_bug",
                            "diagnose_amp_log_scale_read_after_update",
                            "diagnose_amp_log_three_backoffs_in_a_row")),
        Clause("Ningún umbral absoluto separa las etiquetas: la pérdida, la norma y la escala "
               "de un registro pueden estar en cualquier orden de magnitud.",
               EVERY_CASE, ("diagnose_amp_log_thresholds",)),
        Clause("``\"clip_before_unscale\"``: el bucle recorta con ``clip_grad_norm_`` antes "
               "de ``scaler.unscale_``.",
               EVERY_CASE, ("diagnose_amp_log_swapped",)),
        Clause("``\"new_scaler_each_step\"``: crea un GradScaler nuevo (con la misma "
               "configuración) en cada paso; también cuando su único desborde es el "
               "penúltimo paso.",
               (("log.late nan overflow", True),), ("diagnose_amp_log_skips_the_last_steps",)),
        Clause("``\"optimizer_step\"``: da el paso con ``optimizer.step()`` en vez de "
               "``scaler.step(optimizer)``.",
               EVERY_CASE, ("diagnose_amp_log_corrupted_loss_is_inf_only",)),
        Clause("``\"scaled_loss\"``: registra ``scaler.scale(loss).item()`` en vez de "
               "``loss.item()``; también cuando la escala sube mientras la pérdida baja, de "
               "modo que el producto apenas varía en el registro entero.",
               EVERY_CASE, ("diagnose_amp_log_only_the_norm",
                            "diagnose_amp_log_spread_over_the_whole_log")),
        Clause("El ``\"grad_norm\"`` de un paso cuyos gradientes desbordan puede ser ``inf`` o "
               "``nan``: los dos son un desborde.",
               (("log.late nan overflow", True),), ("diagnose_amp_log_overflow_is_inf_only",)),
        Clause("No modifica ``log``: ni la lista ni sus diccionarios.",
               EVERY_CASE, ("diagnose_amp_log_normalises_in_place",)),
    ),
    "simulate_loss_scale": (
        Clause("Devuelve una lista de floats de Python (no tensores), de la misma longitud "
               "que ``found_inf``: la escala después del ``update()`` de cada paso, sin "
               "incluir ``init_scale``; se compara con una tolerancia relativa de 1e-5.",
               EVERY_CASE, ("simulate_loss_scale_float32_tensors",
                            "simulate_loss_scale_includes_init_scale")),
        Clause("Un contador de pasos limpios empieza en 0. En un paso con inf, la escala se "
               "multiplica por ``backoff_factor`` y el contador vuelve a 0.",
               EVERY_CASE, ("simulate_loss_scale_only_skips",
                            "simulate_loss_scale_counter_survives_inf")),
        Clause("En un paso limpio, el contador sube 1; si llega a ``growth_interval`` (un int "
               "≥ 1, también 1), la escala se multiplica por ``growth_factor`` y el contador "
               "vuelve a 0: así crece también dos veces seguidas, y ya desde los primeros "
               "pasos.",
               (("growth_interval", "1"), ("growth_interval", "other"),
                ("found_inf.clean start", True)),
               ("simulate_loss_scale_off_by_one",
                "simulate_loss_scale_counter_not_reset_after_growth",
                "simulate_loss_scale_counter_starts_at_one")),
        Clause("``growth_factor`` (> 1) y ``backoff_factor`` (entre 0 y 1) son los que recibe "
               "la función, no siempre los de GradScaler por defecto (2 y 0.5).",
               (("growth_factor", False), ("backoff_factor", False)),
               ("simulate_loss_scale_always_doubles", "simulate_loss_scale_always_halves")),
        Clause("``init_scale`` es un número positivo cualquiera, también menor que 1, y la "
               "escala no tiene suelo ni techo: puede bajar de 1 (las pruebas nunca la llevan "
               "a inf ni a 0).",
               (("init_scale.below 1", True), ("init_scale", False)),
               ("simulate_loss_scale_floor_at_one",)),
        Clause("No modifica ``found_inf``.",
               EVERY_CASE, ("simulate_loss_scale_pops_the_flags",)),
    ),
}
