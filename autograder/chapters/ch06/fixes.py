"""Chapter 6: how to fix each mistake, shown only in the feedback after grading
(see ``autograder/hidden/fixes.py``; never injected into the notebook)."""

ARREGLOS = {
    "amp_bf16_sin_soporte": "Sin bf16 nativo: en GPU usa float16 con GradScaler; en CPU quédate "
                            "en float32.",
    "amp_fp16_en_cpu": "En CPU usa bfloat16 si tiene bf16 nativo; si no, float32.",
    "amp_desaprovecha_16_bits": "Con bf16 nativo usa bfloat16; en una GPU sin bf16 (T4), "
                                "float16 con GradScaler.",
    "amp_fp16_sin_escalador": "Con float16 usa siempre `torch.amp.GradScaler`.",
    "amp_escalador_innecesario": "Usa GradScaler solo con float16; con bfloat16 o float32, "
                                 "ninguno.",
    "amp_escala_sin_reducir": "Con un inf: `escala *= backoff_factor` y el contador de pasos "
                              "limpios vuelve a 0.",
    "amp_crecimiento_prematuro": "Cuenta los pasos limpios seguidos: el contador vuelve a 0 con "
                                 "cada inf y después de crecer.",
    "amp_crecimiento_tardio": "Cuando `limpios >= growth_interval`: `escala *= growth_factor` y "
                              "`limpios = 0`.",
    "amp_otro_factor": "Usa `growth_factor` al crecer y `backoff_factor` al reducir, los "
                       "argumentos de la función.",
    "amp_desaprovecha_bf16": "Mira primero si el dispositivo tiene bf16 nativo: si lo tiene, "
                             "bfloat16 sin GradScaler.",
    "amp_sin_autocast": "Envuelve el pase hacia adelante y la pérdida en "
                        "`with torch.autocast(device_type=device, dtype=dtype):`.",
    "amp_step_sin_scaler": "Llama a `scaler.step(optimizer)` en vez de `optimizer.step()`.",
    "amp_sin_pesos_maestros": "No conviertas el modelo (`model.to(dtype)`, `.half()`): deja que "
                              "autocast elija el dtype de cada operación.",
    "amp_paso_con_inf": "Da el paso con `scaler.step(optimizer)`, que lo salta si hay inf.",
    "amp_dtype_ignorado": "Pasa `dtype=dtype` a `torch.autocast`.",
    "amp_autocast_otro_dispositivo": "Pasa `device_type=device` a `torch.autocast`.",
    "amp_sin_update": "Al final de cada ciclo, tras `scaler.step(optimizer)`, llama a "
                      "`scaler.update()`.",
    "amp_update_por_microlote": "Mueve `scaler.update()` dentro del `if` del final del ciclo, "
                                "después de `scaler.step(optimizer)`.",
    "amp_unscale_por_microlote": "En cada micro-lote solo `scaler.scale(loss / n).backward()`; "
                                 "`scaler.unscale_(optimizer)` una vez, al final del ciclo, "
                                 "antes de recortar.",
    "amp_ultimo_ciclo_por_accum": "Divide por el tamaño real del ciclo: "
                                  "`n = len(batches[inicio:inicio + accum])`.",
    "amp_zero_grad_en_micro_lote": "Llama a `optimizer.zero_grad()` una vez por ciclo, antes "
                                   "de su primer micro-lote (o después de su paso).",
    "amp_grad_previo_sin_borrar": "Llama a `optimizer.zero_grad()` antes del primer "
                                  "micro-lote de cada ciclo, el primero incluido.",
    "amp_perdida_escalada": "Devuelve `loss.item()` de la pérdida original, no la de "
                            "`scaler.scale(loss)`.",
}
