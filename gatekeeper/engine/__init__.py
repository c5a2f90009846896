"""The bundled engine: a PyTorch Qwen2/Llama implementation with a reference path and an
optimized path (paged KV cache, prefix caching, continuous batching) carrying named faults.

Nothing on the gate side imports this package; gates reach the engine only over HTTP.
"""
