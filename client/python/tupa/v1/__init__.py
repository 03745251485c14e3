# The generated stubs of proto/tupa/v1 (job_pb2, job_service_pb2_grpc, ...)
# land here when the package is built (setup.py); they are not in git.
