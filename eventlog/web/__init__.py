"""The local web page (`eventlog serve`, docs/web.md): a thin, token-guarded face over recall, search and dlp.

- `app.py`: the Starlette routes (pages and the page's JSON API) and the templates;
- `auth.py`: the token (query, cookie, bearer), the CSRF header for POST, the security headers;
- `redact.py`: every text shown passes the DLP scanner first;
- `timeline.py`: one chat's timeline, a page at a time (keyset paging over the day files it needs);
- `queries.py`: the chat list, search and the alert queue, through the same library calls as the CLI;
- `status.py`: the status strip (doctor's tap checks, verify's chain, the last event);
- `server.py`: the socket, the URL line, uvicorn, a clean stop on SIGTERM / Ctrl-C.
"""
