#include "calibration/bench/rendezvous.hpp"

#include "calibration/bench/bench_common.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace dtsim::bench {

namespace {

using Clock = std::chrono::steady_clock;

bool timed_out(Clock::time_point start, double timeout_s)
{
  return std::chrono::duration<double>(Clock::now() - start).count() > timeout_s;
}

std::string via_file(const std::string& base, int rank, int tag, const std::string& root_id, double timeout_s)
{
  const std::string path = base + "." + std::to_string(tag);
  if (rank == 0) {
    write_file(path, root_id);
    return root_id;
  }
  const auto start = Clock::now();
  while (!timed_out(start, timeout_s)) {
    std::ifstream in(path, std::ios::binary);
    std::string id((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (id.size() == root_id.size())
      return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw BenchError("rendezvous: no id in " + path + " after " + std::to_string(timeout_s) + " s (is rank 0 running?)");
}

void send_all(int fd, const std::string& data)
{
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t k = ::send(fd, data.data() + sent, data.size() - sent, 0);
    if (k <= 0)
      throw BenchError(std::string("rendezvous: send failed: ") + std::strerror(errno));
    sent += static_cast<std::size_t>(k);
  }
}

std::string via_tcp(const std::string& host, int port, int rank, int nranks, const std::string& root_id, double timeout_s)
{
  if (rank == 0) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, nranks) != 0)
      throw BenchError("rendezvous: cannot listen on port " + std::to_string(port) + ": " + std::strerror(errno));
    for (int k = 1; k < nranks; ++k) {
      const int c = ::accept(fd, nullptr, nullptr);
      if (c < 0)
        throw BenchError(std::string("rendezvous: accept failed: ") + std::strerror(errno));
      send_all(c, root_id);
      ::close(c);
    }
    ::close(fd);
    return root_id;
  }
  const auto start = Clock::now();
  while (!timed_out(start, timeout_s)) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) == 0) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      if (::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
        std::string id(root_id.size(), '\0');
        std::size_t got = 0;
        while (got < id.size()) {
          const ssize_t k = ::recv(fd, id.data() + got, id.size() - got, 0);
          if (k <= 0)
            break;
          got += static_cast<std::size_t>(k);
        }
        ::close(fd);
        ::freeaddrinfo(res);
        if (got == id.size())
          return id;
      } else {
        ::close(fd);
        ::freeaddrinfo(res);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw BenchError("rendezvous: could not get the id from " + host + ":" + std::to_string(port) + " within " +
                   std::to_string(timeout_s) + " s");
}

}  // namespace

std::string exchange_unique_id(const std::string& spec, int rank, int nranks, int tag, const std::string& root_id,
                               double timeout_s)
{
  if (spec.rfind("tcp:", 0) == 0) {
    const auto colon = spec.rfind(':');
    if (colon <= 4)
      throw BenchError("rendezvous: expected tcp:HOST:PORT, found '" + spec + "'");
    return via_tcp(spec.substr(4, colon - 4), std::stoi(spec.substr(colon + 1)) + tag, rank, nranks, root_id, timeout_s);
  }
  return via_file(spec.rfind("file:", 0) == 0 ? spec.substr(5) : spec, rank, tag, root_id, timeout_s);
}

}  // namespace dtsim::bench
