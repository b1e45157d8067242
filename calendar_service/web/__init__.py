"""HTTP plumbing shared by the fronts (REST, MCP over HTTP, the settings pages): the services
the app hands them, request ids, the bearer token, body limits and problem+json responses.

Fronts import from here, never from each other."""
