#include "server/PeerSocket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace hetc::server {

namespace {

bool peerIs(int fd, const std::string &address, int port) {
  sockaddr_storage peer{};
  socklen_t length = sizeof peer;
  if (getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &length) != 0)
    return false;
  char text[INET6_ADDRSTRLEN] = {};
  int peerPort = 0;
  if (peer.ss_family == AF_INET) {
    auto *in = reinterpret_cast<sockaddr_in *>(&peer);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    peerPort = ntohs(in->sin_port);
  } else if (peer.ss_family == AF_INET6) {
    auto *in = reinterpret_cast<sockaddr_in6 *>(&peer);
    inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof text);
    peerPort = ntohs(in->sin6_port);
  } else {
    return false;
  }
  return peerPort == port && address == text;
}

} // namespace

int findPeerSocket(const std::string &address, int port) {
  DIR *fds = opendir("/proc/self/fd");
  if (!fds)
    return -1;
  int found = -1;
  while (dirent *entry = readdir(fds)) {
    char *end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end)
      continue;
    struct stat info;
    if (fstat(static_cast<int>(fd), &info) != 0 || !S_ISSOCK(info.st_mode))
      continue;
    if (peerIs(static_cast<int>(fd), address, port)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(fds);
  return found;
}

bool peerHungUp(int socket) {
  if (socket < 0)
    return false;
  pollfd watched{socket, POLLRDHUP, 0};
  if (poll(&watched, 1, 0) <= 0)
    return false;
  return (watched.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

} // namespace hetc::server
