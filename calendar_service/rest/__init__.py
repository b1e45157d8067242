"""The ``/api/v1`` REST front: the only Starlette code of the core fronts."""
