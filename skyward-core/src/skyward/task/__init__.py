"""What a task uses on its node: where it runs (`instance`, `runtime`), its share of the data
(`sharding`), and how its printed output is routed back (`output`, `output_routing`).

They need nothing of ours but `errors`, so the worker, the client and the public names all
import them from below.
"""
