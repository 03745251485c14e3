// Channel credentials for a client of the scheduler (the CLI, the worker):
// TLS when a CA or a client certificate is given, mutual TLS when the
// certificate and key are, else insecure (loopback, dev mode). PEM texts,
// not paths.
#ifndef TUPA_COMMON_CLIENT_CREDENTIALS_H_
#define TUPA_COMMON_CLIENT_CREDENTIALS_H_

#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

namespace tupa {

std::shared_ptr<grpc::ChannelCredentials> ClientCredentials(
    const std::string& ca_pem, const std::string& cert_pem,
    const std::string& key_pem);

}  // namespace tupa

#endif  // TUPA_COMMON_CLIENT_CREDENTIALS_H_
