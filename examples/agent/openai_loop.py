"""A real model's loop over the calendar tools with OpenAI's SDK (not run in CI).

    pip install openai
    OPENAI_API_KEY=... CALENDAR_API_KEY=calsk_... python examples/agent/openai_loop.py \
        "Move my dentist appointment to Thursday at the same time"

The tools' input schemas are in the subset OpenAI's function calling takes (docs/mcp.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import openai
from mcp_session import calendar, call

MODEL = os.environ.get("OPENAI_MODEL", "gpt-4.1")


async def main(task: str) -> None:
    model = openai.AsyncOpenAI()
    async with calendar() as client:
        listed = await client.list_tools()
        tools: list[Any] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.input_schema,
                },
            }
            for t in listed.tools
        ]
        messages: list[Any] = [
            {"role": "system", "content": client.instructions or ""},  # how to use the tools
            {"role": "user", "content": task},
        ]
        for _ in range(20):  # a bound on the turns
            reply = await model.chat.completions.create(model=MODEL, messages=messages, tools=tools)
            message = reply.choices[0].message
            messages.append(message)
            if not message.tool_calls:
                print(message.content)
                return
            for tool_call in message.tool_calls:
                arguments = json.loads(tool_call.function.arguments or "{}")
                text, _ = await call(client, tool_call.function.name, arguments)
                print(f"-> {tool_call.function.name} {arguments}\n<- {text[:200]}")
                messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": text})


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What do I have tomorrow?"))
