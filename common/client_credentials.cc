#include "common/client_credentials.h"

namespace tupa {

std::shared_ptr<grpc::ChannelCredentials> ClientCredentials(
    const std::string& ca_pem, const std::string& cert_pem,
    const std::string& key_pem) {
  if (ca_pem.empty() && cert_pem.empty()) {
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ca_pem;
  ssl.pem_cert_chain = cert_pem;
  ssl.pem_private_key = key_pem;
  return grpc::SslCredentials(ssl);
}

}  // namespace tupa
