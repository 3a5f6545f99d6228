"""Registering serialisable classes with Keras without importing Keras at package import.

`import onestep_gan` (and `onestep_gan.rdf2text`) must not import Keras and TensorFlow (so that
`onestep-gan --help` is fast), yet `keras.saving.load_model` must find our classes. So a package
registers its modules now if Keras is already imported, else right after Keras is imported (a
one-shot import hook). A module the hook cannot import yet, because the module of ours that imported
Keras is only half initialised, is imported when that module ends (`import_pending`). Code that loads
models calls the package's register function itself too.
"""

import importlib
import importlib.abc
import importlib.util
import sys


def register_when_keras_loads(modules):
    """Imports `modules` now if `keras` is imported, else as soon as it is (one finder serves
    every caller: a second finder would never see the `keras` import)."""
    if "keras" in sys.modules:
        _import_all(modules)
        return
    finder = next((item for item in sys.meta_path if isinstance(item, _AfterKeras)), None)
    if finder is None:
        finder = _AfterKeras()
        sys.meta_path.insert(0, finder)
    finder.modules.extend(modules)


_pending = []  # modules a half-initialised module of ours kept from importing


def _import_all(modules):
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            # Keras was imported by one of our own modules that these modules need (touching
            # `onestep_gan.GANOptimizer` first): that module is only half initialised, so they
            # cannot be imported yet. They are kept for `import_pending`, which the modules others
            # import names from call last; every loader of ours calls its package's register
            # function first too.
            if not _initialising_module_of(module.split(".")[0]):
                raise
            _pending.append(module)


def import_pending():
    """Imports the modules kept back while a module of ours was half initialised. Called at the
    end of each module whose names other modules of ours import (`from ... import GANModel`)."""
    modules = list(dict.fromkeys(_pending))
    _pending.clear()
    _import_all(modules)


def _initialising_module_of(package):
    return any(
        name.split(".")[0] == package and getattr(getattr(module, "__spec__", None), "_initializing", False)
        for name, module in list(sys.modules.items())
    )


class _AfterKeras(importlib.abc.MetaPathFinder):
    """Finder that wraps Keras' loader once, to import `modules` after Keras has loaded."""

    def __init__(self):
        self.modules = []

    def find_spec(self, name, path=None, target=None):
        if name != "keras":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader, modules = spec.loader, self.modules

        class Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                _import_all(modules)

        spec.loader = Loader()
        return spec
