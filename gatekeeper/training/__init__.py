"""Building the shipped gk-tiny model, on CPU: nothing the serving runtime imports.

- `train.py`: training gk-tiny (`python -m gatekeeper.training.train`; the exact commands that
  reproduce the shipped weights are in `gatekeeper/models/gk-tiny/README.md`).
- `train_data.py`: its data curriculum (which examples each step sees) and micro-batching.
- `tokenizer_train.py`: training its byte-level BPE tokenizer.
- `evaluate.py`: evaluating a checkpoint on held-out prompts (`python -m gatekeeper.training.evaluate`).

Its tasks come from the torch-free `gatekeeper/tasks/`; the model, checkpoint and tokenizer code
it trains comes from `gatekeeper/engine/`. The dependency runs one way: training imports the
engine, the engine never imports training.
"""
