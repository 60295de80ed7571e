"""Work that nbconvert repeats for every graded notebook, done once per process instead.

1. nbconvert validates a notebook after each preprocessor with ``relax_add_props=True``,
   and nbformat 5.10 compiles a new fastjsonschema validator on every such call (~50 ms):
   about 40 compilations, 2 s of CPU, per graded notebook. That validator depends only on
   the schema version, so it is compiled once. (nbformat also keeps the relaxed validator
   as the current one; that is unchanged.)
2. Every feedback page builds a new HTML exporter, whose Jinja environment compiles the
   same nine templates again (~0.5 s). A per-exporter-class bytecode cache keeps them;
   Jinja checks each template's source checksum, so an edited template is recompiled.
3. nbgrader checks each graded cell's metadata with ``jsonschema.validate``, which first
   checks the schema itself against its meta-schema (~7 ms, twice per graded cell per
   notebook). The schema is one of nbgrader's files: it is checked once, and its
   validator kept; the cell is validated exactly as before (same first error).
4. nbgrader's ``Gradebook`` creates a SQLAlchemy engine per object, 13 per graded notebook,
   and SQLAlchemy keeps its compiled statements per engine: every query was compiled again
   (~75 ms per notebook). One engine per database URL (and process) serves them all; each
   ``Gradebook`` still checks the tables and closes as before (closing an engine gives
   back its connections, and the next use opens new ones).

Grades and feedback are byte-for-byte what they were: only the repeated work goes.
"""

import functools
import json
import os
import types

import jinja2
import jsonschema
from nbconvert.exporters.templateexporter import TemplateExporter
from nbformat import validator


class MemoryBytecodeCache(jinja2.BytecodeCache):
    """Compiled templates kept in memory for the life of the process."""

    def __init__(self):
        self.store, self.hits = {}, 0

    def load_bytecode(self, bucket):
        if bucket.key in self.store:
            bucket.bytecode_from_string(self.store[bucket.key])
            self.hits += 1

    def dump_bytecode(self, bucket):
        self.store[bucket.key] = bucket.bytecode_to_string()


def cache_relaxed_validators():
    original = validator.get_validator
    if hasattr(original, "relaxed_cache"):
        return
    cache = {}

    @functools.wraps(original)
    def get_validator(version=None, version_minor=None, relax_add_props=False, name=None):
        if not relax_add_props:
            return original(version, version_minor, False, name)
        key = (version, version_minor, name)
        if key not in cache:
            cache[key] = original(version, version_minor, True, name)
        return cache[key]

    get_validator.relaxed_cache = cache
    validator.get_validator = get_validator


def cache_compiled_templates():
    original = TemplateExporter._create_environment
    if hasattr(original, "bytecode_caches"):
        return
    caches = {}

    @functools.wraps(original)
    def create_environment(self):
        environment = original(self)
        environment.bytecode_cache = caches.setdefault(type(self), MemoryBytecodeCache())
        return environment

    create_environment.bytecode_caches = caches
    TemplateExporter._create_environment = create_environment


def cache_metadata_validators():
    from nbgrader.nbgraderformat import common

    if isinstance(common.jsonschema, types.SimpleNamespace):
        return
    validators = {}

    def validate(instance, schema):
        """``jsonschema.validate`` with the schema checked once."""
        key = json.dumps(schema, sort_keys=True)
        if key not in validators:
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            validators[key] = cls(schema)
        error = jsonschema.exceptions.best_match(validators[key].iter_errors(instance))
        if error is not None:
            raise error

    common.jsonschema = types.SimpleNamespace(validate=validate, validators=validators)


def share_gradebook_engines():
    from nbgrader import api

    if hasattr(api.create_engine, "engines"):
        return
    original = api.create_engine
    engines = {}

    @functools.wraps(original)
    def create_engine(url, **options):
        # A forked process makes its own: an engine's connections are not to be shared.
        key = (os.getpid(), str(url), tuple(sorted(options.items())))
        if key not in engines:
            engines[key] = original(url, **options)
        return engines[key]

    create_engine.engines = engines
    api.create_engine = create_engine


def install():
    """The four caches, in this process (idempotent)."""
    cache_relaxed_validators()
    cache_compiled_templates()
    cache_metadata_validators()
    share_gradebook_engines()
