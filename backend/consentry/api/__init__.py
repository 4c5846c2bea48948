"""HTTP routers: parse, authorize, call the runtime, render. No SQL and no graph code here."""
