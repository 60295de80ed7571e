"""The feedback page's exporter: nbconvert's ``HTMLExporter`` without its last pass.

nbconvert 7.16's ``HTMLExporter.from_notebook_node`` renders the page, then parses all of
it with BeautifulSoup to give images without alt text an English one and JupyterLab's
cell classes a ``tabindex``, and writes it out again: about 0.1 s a page, half of what the
feedback costs. The classic template that the Spanish page extends has none of those
classes, and the only images on the page are cell outputs (sanitizing drops the images
of student markdown), so those that the templates wrote without alt text get one here,
in Spanish, and the page is otherwise the template's own output. The rest of the method
is nbconvert's (``nbconvert/exporters/html.py``, pinned in requirements.txt).
"""

import re

from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

IMAGE_ALT = "Imagen producida por la celda (sin descripción)"
_IMAGE_WITHOUT_ALT = re.compile(r"<img\b(?![^>]*\salt=)")


class FeedbackPageExporter(HTMLExporter):
    def from_notebook_node(self, nb, resources=None, **kw):
        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        highlight_code = self.filters.get(
            "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
        resources = self._init_resources(resources)
        filter_data_type = WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources)
        self.register_filter("highlight_code", highlight_code)
        self.register_filter("filter_data_type", filter_data_type)
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return _IMAGE_WITHOUT_ALT.sub(f'<img alt="{IMAGE_ALT}"', html), resources
