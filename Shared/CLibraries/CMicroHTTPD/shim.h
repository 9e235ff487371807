#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/*
 * Typed front doors for the variadic parts of libmicrohttpd, which Swift cannot call.
 * Each one passes exactly the option types the C API expects (unsigned int, int, pointers).
 */

/// Leaves the path and query arguments percent-encoded so the router sees `%2F` inside a
/// path segment as data, not as a separator; the Swift side decodes each piece itself.
static inline size_t cmhd_keep_escaped(void *cls, struct MHD_Connection *connection, char *s)
{
    (void) cls; (void) connection;
    size_t n = 0;
    while (s[n] != '\0') n++;
    return n;
}

/// Starts a daemon on a listening socket the caller already bound.
static inline struct MHD_Daemon *cmhd_start_daemon(
    unsigned int flags, int listen_fd, unsigned int thread_pool_size,
    unsigned int connection_timeout_seconds, unsigned int per_ip_limit, unsigned int connection_limit,
    unsigned int connection_memory_limit,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls)
{
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket) listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) connection_memory_limit,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
        MHD_OPTION_UNESCAPE_CALLBACK, cmhd_keep_escaped, NULL,
        MHD_OPTION_END);
}

/// The peer address of a connection, or NULL.
static inline const struct sockaddr *cmhd_client_address(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/// The socket of a connection, or -1.
static inline int cmhd_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int) info->connect_fd;
}

/// Connections the daemon currently holds (all pool threads together).
static inline unsigned int cmhd_current_connections(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}
