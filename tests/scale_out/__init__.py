"""The scale-out harness: real redis-server, uvicorn replicas and haproxy processes
(``cluster``), the replica server they run (``replica_server``), a client-side router
that sends every request where a scaled-out server least wants it (``router``), and
hand-driven legacy sessions for the refusal cases (``raw``)."""
