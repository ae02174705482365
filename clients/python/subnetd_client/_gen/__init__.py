"""subnet.v1 stubs, generated from schema/ by clients/python/generate.sh with
libprotoc 3.21.12 and grpc_python_plugin. Do not edit: change the proto and rerun
clients/python/generate.sh."""
