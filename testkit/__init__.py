"""What the tests and the evaluation scripts both build on: stand-ins for what perfgate talks to,
generated inputs, and throwaway services. Both import it; it imports neither
(tests/test_layers.py keeps the direction).

- ``fake_github/``: GitHub's REST API on loopback, held to its OpenAPI description;
  ``app_fakes``: the App's scene on it (artifacts, files, a webhook receiver);
  ``payloads`` and ``webhook_schemas``: webhook deliveries valid against the published schemas.
- ``fake_cuda``, ``fake_nvml``: a simulated ``torch.cuda`` and NVML;
  ``sim_workers``, ``sim_bisect``: simulated benchmark workers and bisect histories.
- ``gitrepo``: small real git repositories (a base and a head branch);
  ``results_doc``, ``documents``, ``synth``: results.json documents and Kineto traces.
- ``services``, ``compose``: PostgreSQL and Redis from the system packages, the Dockerfile's and
  docker-compose.yml's commands.
"""
