"""Tool calls: pick the right function(s) from OpenAI-style tool definitions and fill the
arguments from the request (strings, integers, floats, booleans, enums, arrays); or, after a tool
result comes back, give a final answer that uses it.

Calls are rendered as the chat template renders them:
`<tool_call>{"name": N, "arguments": ARGS}</tool_call>`, one per line, ARGS as `json.dumps`.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any, Callable

from gatekeeper.endpoints.chat_types import ChatMessage, ToolCall, ToolDefinition
from gatekeeper.json_types import JsonObject

from gatekeeper.tasks import vocab
from gatekeeper.tasks.sample import Sample

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
CURRENCIES = ("USD", "EUR", "JPY", "GBP", "CNY")
SYMBOLS = ("AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "GOOG", "IBM", "ORCL")


@dataclass(frozen=True)
class _Tool:
    name: str
    description: str
    params: dict[str, JsonObject]  # parameter -> its JSON Schema
    make: Callable[[random.Random], tuple[JsonObject, str]]  # -> (arguments, request text)
    result: Callable[[random.Random, JsonObject], tuple[JsonObject, str]]  # -> (result, final answer)

    def definition(self) -> ToolDefinition:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": {"type": "object", "properties": self.params, "required": list(self.params)}}}


def _weather(r):
    a = {"city": r.choice(vocab.CITIES), "unit": r.choice(("celsius", "fahrenheit"))}
    return a, f"what is the weather in {a['city']} in {a['unit']}"


def _weather_result(r, a):
    t, cond = r.randint(-10, 35), r.choice(("sunny", "cloudy", "rainy", "windy"))
    return {"temperature": t, "condition": cond}, f"It is {t} degrees {a['unit']} and {cond} in {a['city']}."


def _currency(r):
    frm, to = r.sample(CURRENCIES, 2)
    a = {"amount": round(r.randint(100, 99999) / 100, 2), "from_currency": frm, "to_currency": to}
    return a, f"convert {a['amount']} {frm} to {to}"


def _currency_result(r, a):
    v = round(r.randint(100, 999999) / 100, 2)
    return {"converted": v}, f"{a['amount']} {a['from_currency']} is {v} {a['to_currency']}."


def _alarm(r):
    a = {"hour": r.randint(0, 23), "minute": r.randint(0, 59), "repeat": r.random() < 0.5}
    rep = "every day" if a["repeat"] else "just once"
    return a, f"set an alarm for {a['hour']}:{a['minute']:02d} {rep}"


def _alarm_result(r, a):
    i = r.randint(1, 999)
    return {"alarm_id": i}, f"Your alarm for {a['hour']}:{a['minute']:02d} is set with id {i}."


def _email(r):
    who = r.choice(vocab.NAMES)
    a = {"to": f"{who.lower()}@example.com", "subject": f"{r.choice(vocab.ADJECTIVES)} {r.choice(vocab.NOUNS)}"}
    return a, f"send an email to {a['to']} with the subject {a['subject']}"


def _email_result(r, a):
    return {"status": "sent"}, f"The email to {a['to']} was sent."


def _tags(r):
    a = {"item_id": r.randint(1, 9999), "tags": r.sample(vocab.COLORS + vocab.ANIMALS, r.randint(1, 3))}
    return a, f"tag item {a['item_id']} with {' and '.join(a['tags'])}"


def _tags_result(r, a):
    return {"ok": True, "num_tags": len(a["tags"])}, f"Item {a['item_id']} now has {len(a['tags'])} new tags."


def _flights(r):
    o, d = r.sample(vocab.CITIES, 2)
    a = {"origin": o, "destination": d, "passengers": r.randint(1, 9), "nonstop": r.random() < 0.5}
    stop = "nonstop only" if a["nonstop"] else "stops are fine"
    return a, f"find flights from {o} to {d} for {a['passengers']} passengers, {stop}"


def _flights_result(r, a):
    n, p = r.randint(0, 12), r.randint(80, 1500)
    return {"num_flights": n, "lowest_price": p}, f"I found {n} flights from {a['origin']} to {a['destination']}; the cheapest costs {p}."


def _stock(r):
    a = {"symbol": r.choice(SYMBOLS)}
    return a, f"get the stock price of {a['symbol']}"


def _stock_result(r, a):
    p = round(r.randint(1000, 99999) / 100, 2)
    return {"price": p}, f"{a['symbol']} is trading at {p}."


def _event(r):
    a = {"title": f"{r.choice(vocab.ADJECTIVES)} {r.choice(vocab.NOUNS)}", "day": r.choice(DAYS),
         "attendees": r.sample(vocab.NAMES, r.randint(1, 3))}
    return a, f"create an event called {a['title']} on {a['day']} with {' and '.join(a['attendees'])}"


def _event_result(r, a):
    return {"created": True}, f"The event {a['title']} is on {a['day']}."


def _p(t: str, d: str, **extra) -> JsonObject:
    return {"type": t, "description": d, **extra}


TOOLS: tuple[_Tool, ...] = (
    _Tool("get_weather", "Current weather in a city.",
          {"city": _p("string", "City name"), "unit": _p("string", "Unit", enum=["celsius", "fahrenheit"])},
          _weather, _weather_result),
    _Tool("convert_currency", "Convert money between currencies.",
          {"amount": _p("number", "Amount"), "from_currency": _p("string", "From", enum=list(CURRENCIES)),
           "to_currency": _p("string", "To", enum=list(CURRENCIES))}, _currency, _currency_result),
    _Tool("set_alarm", "Set an alarm.",
          {"hour": _p("integer", "Hour 0-23"), "minute": _p("integer", "Minute"),
           "repeat": _p("boolean", "Repeat daily")}, _alarm, _alarm_result),
    _Tool("send_email", "Send an email.",
          {"to": _p("string", "Address"), "subject": _p("string", "Subject")}, _email, _email_result),
    _Tool("add_tags", "Add tags to an item.",
          {"item_id": _p("integer", "Item id"), "tags": {"type": "array", "items": {"type": "string"}}},
          _tags, _tags_result),
    _Tool("search_flights", "Search flights.",
          {"origin": _p("string", "From city"), "destination": _p("string", "To city"),
           "passengers": _p("integer", "Passengers"), "nonstop": _p("boolean", "Nonstop only")},
          _flights, _flights_result),
    _Tool("get_stock_price", "Latest stock price.",
          {"symbol": _p("string", "Ticker", enum=list(SYMBOLS))}, _stock, _stock_result),
    _Tool("create_event", "Create a calendar event.",
          {"title": _p("string", "Title"), "day": _p("string", "Day", enum=list(DAYS)),
           "attendees": {"type": "array", "items": {"type": "string"}}}, _event, _event_result),
)
SYSTEM = "You are a helpful assistant that can call tools."


def render_call(name: str, arguments: JsonObject) -> str:
    """One call in the chat template's form."""
    return f'<tool_call>{{"name": "{name}", "arguments": {json.dumps(arguments, ensure_ascii=False)}}}</tool_call>'


def generate(rng: random.Random, num_calls: int | None = None, with_result: bool | None = None) -> Sample:
    """1-3 calls (or `num_calls`) from a menu of 2-4 tools; `with_result` adds the tool round and
    asks for the final answer instead."""
    n = num_calls or rng.choice((1, 1, 1, 2, 2, 3))
    with_result = rng.random() < 0.25 if with_result is None else with_result
    if with_result:
        n = 1
    chosen = rng.sample(TOOLS, n)
    menu = list(chosen) + rng.sample([t for t in TOOLS if t not in chosen], rng.randint(max(0, 2 - n), 2))
    rng.shuffle(menu)
    calls = [(t, *t.make(rng)) for t in chosen]
    request = " and ".join(text for _, _, text in calls)
    request = f"Please {request}."
    messages: list[ChatMessage] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": request}]
    rendered = "\n".join(render_call(t.name, args) for t, args, _ in calls)
    meta: dict[str, Any] = {"num_calls": n, "with_result": with_result,
                            "calls": [{"name": t.name, "arguments": args} for t, args, _ in calls]}
    if not with_result:
        return Sample(tuple(messages), tuple(t.definition() for t in menu), rendered, "tool_call", meta)
    tool, args, _ = calls[0]
    result, final = tool.result(rng, args)
    messages.append({"role": "assistant", "content": "",
                     "tool_calls": [{"type": "function", "function": {"name": tool.name, "arguments": args}}]})
    messages.append({"role": "tool", "content": json.dumps(result)})
    return Sample(tuple(messages), tuple(t.definition() for t in menu), final, "tool_call", meta)


_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def parse_calls(text: str) -> list[dict[str, Any]] | None:
    """The calls in `text` as [{"name", "arguments"}], or None if any is malformed."""
    out = []
    for body in _CALL.findall(text):
        try:
            call = json.loads(body)
        except ValueError:
            return None
        if not isinstance(call, dict) or set(call) != {"name", "arguments"}:
            return None
        out.append(call)
    return out


def score(sample: Sample, output_text: str) -> bool:
    """Final answers must match exactly; calls must have the same names and arguments, values and
    types exactly equal, in order, with nothing but calls in the reply."""
    if sample.meta["with_result"]:
        return output_text.strip() == sample.answer
    if _CALL.sub("", output_text).strip():
        return False
    got = parse_calls(output_text)
    want = sample.meta["calls"]
    if got is None or len(got) != len(want):
        return False
    return all(json.dumps(g, sort_keys=True) == json.dumps(w, sort_keys=True) for g, w in zip(got, want))


def openai_messages(messages: Sequence[ChatMessage], id_prefix: str) -> list[ChatMessage]:
    """A task's messages as the OpenAI API takes them: tool-call arguments as JSON strings, each
    assistant call with an `id` (the schema requires one; vLLM answers 400 without it) and each
    tool message with the `tool_call_id` of the call it answers."""
    out: list[ChatMessage] = []
    call_id = None
    for m in messages:
        m = m.copy()
        if m.get("tool_calls"):
            calls: list[ToolCall] = []
            for k, c in enumerate(m["tool_calls"]):
                call_id = c.get("id") or f"call_{id_prefix}_{k}"
                fn = c["function"].copy()
                fn["arguments"] = fn["arguments"] if isinstance(fn["arguments"], str) else json.dumps(fn["arguments"])
                calls.append({"id": call_id, "type": "function", "function": fn})
            m["tool_calls"] = calls
        elif m.get("role") == "tool" and call_id is not None and "tool_call_id" not in m:
            m["tool_call_id"] = call_id
        out.append(m)
    return out
