"""The bundled engine's OpenAI-compatible HTTP server (FastAPI), following vLLM's surface."""
