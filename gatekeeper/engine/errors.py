"""Errors the engine raises for things a user can cause (bad checkpoint, bad options)."""


class EngineError(Exception):
    """Base class: reaches the user as one line, never a traceback."""


class CheckpointError(EngineError):
    """A checkpoint directory is missing files or holds something the engine cannot load."""


class EngineOptionError(EngineError):
    """An engine option or fault switch has a value the engine cannot use."""


class RequestError(EngineError):
    """A request the engine cannot serve (too long, bad token ids); the server answers 400."""


class EngineDeadError(EngineError):
    """The engine loop stopped; every request fails until restart (the server answers 503)."""


class EngineCoreError(EngineError):
    """The engine core itself failed inside a step: the engine loop dies with it, as vLLM's engine
    core process does (every later request then fails with EngineDeadError)."""
