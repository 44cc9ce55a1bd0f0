// Whether an HTTP client is still there. The HTTP library tells a handler
// nothing of its connection, so the connection's socket is found by the
// client's address and port, and polled for the hang-up.
#ifndef HETC_SERVER_PEERSOCKET_H
#define HETC_SERVER_PEERSOCKET_H

#include <string>

namespace hetc::server {

/// This process's socket connected to `address`:`port`, or -1.
int findPeerSocket(const std::string &address, int port);

/// Whether the peer of `socket` has closed its side or reset it (false for
/// -1: an unknown socket is taken to be alive).
bool peerHungUp(int socket);

} // namespace hetc::server

#endif // HETC_SERVER_PEERSOCKET_H
