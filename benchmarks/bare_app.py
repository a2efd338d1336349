"""The baseline: a bare FastAPI app with one JSON route, served the same way as GShare's API."""

from fastapi import FastAPI

app = FastAPI()


@app.get("/bare")
async def bare() -> dict[str, object]:
    return {"id": "00000000-0000-0000-0000-000000000000", "email": "a@example.org", "ok": True}
