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
        Clause("Devuelve una lista de ``float`` de Python, un peso por micro-lote y en el "
               "orden de ``sizes``.",
               EVERY_CASE, ("micro_batch_weights_as_a_tensor",)),
        Clause("No cambia ``sizes``.", (("sizes.contenedor", "list"),),
               ("micro_batch_weights_in_the_callers_list",)),
    ),
}
