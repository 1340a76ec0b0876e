"""Request dialects the oracle answers: one class per family of prompts.

A dialect has ``match(request) -> bool`` and ``answer(request, gold) -> Reply``. The core keeps
memmatrix's own (``memmatrix.py``: the judge and the extractor) and what every dialect needs
(``common.py``, the API for dialect authors); each system's live in its folder
(``systems/<name>/oracle.py``, named by ``oracle`` in its ``system.yaml``). They are tried in
order (``oracle.Oracle``); the first that matches answers.
"""
