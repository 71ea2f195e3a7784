"""The LLM generator of `kerntune optimize`: any OpenAI-compatible endpoint
(client.py), the conversation record and its replay (recording.py), the
prompts (prompts.py), the answer format (answer.py) and the Generator
(generator.py)."""
