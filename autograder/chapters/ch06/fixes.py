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
    "amp_otro_umbral": "Recorta con el `max_norm` que recibe la función.",
    "amp_desaprovecha_bf16": "Mira primero si el dispositivo tiene bf16 nativo: si lo tiene, "
                             "bfloat16 sin GradScaler.",
    "amp_sin_autocast": "Envuelve el pase hacia adelante y la pérdida en "
                        "`with torch.autocast(device_type=device, dtype=dtype):`.",
    "amp_step_sin_scaler": "Llama a `scaler.step(optimizer)` en vez de `optimizer.step()`.",
    "amp_sin_update": "Tras `scaler.step(optimizer)`, llama a `scaler.update()` en cada paso.",
    "amp_sin_recorte": "`scaler.unscale_(optimizer)`, luego "
                       "`torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`, y luego "
                       "`scaler.step(optimizer)`.",
    "amp_sin_pesos_maestros": "No conviertas el modelo (`model.to(dtype)`, `.half()`): deja que "
                              "autocast elija el dtype de cada operación.",
    "amp_paso_con_inf": "Da el paso con `scaler.step(optimizer)`, que lo salta si hay inf.",
    "amp_dtype_ignorado": "Pasa `dtype=dtype` a `torch.autocast`.",
    "amp_autocast_otro_dispositivo": "Pasa `device_type=device` a `torch.autocast`.",
    "amp_salto_a_mano": "Quita la búsqueda de inf: `scaler.step(optimizer)` y después "
                        "`scaler.update()`, en todos los pasos.",
    "amp_perdida_escalada": "Devuelve `loss.item()` de la pérdida original, no la de "
                            "`scaler.scale(loss)`.",
}
