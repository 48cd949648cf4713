import errno
import logging
import socket

from .poller import POLL_EVENT_TYPE
from .tcp_connection import TcpConnection, _getAddrType, wrapConnected


logger = logging.getLogger(__name__)


class SERVER_STATE:
    UNBINDED = 0,
    BINDED = 1


class TcpServer(object):

    def __init__(
            self, poller, host, port, onNewConnection,
            sendBufferSize = 2 ** 13,
            recvBufferSize = 2 ** 13,
            connectionTimeout = 3.5,
            keepalive = None,
            sslContext = None,
    ):
        self.__poller = poller
        self.__host = host
        self.__port = int(port)
        self.__hostAddrType = _getAddrType(host)
        self.__sendBufferSize = sendBufferSize
        self.__recvBufferSize = recvBufferSize
        self.__socket = None
        self.__fileno = None
        self.__keepalive = keepalive
        self.__state = SERVER_STATE.UNBINDED
        self.__onNewConnectionCallback = onNewConnection
        self.__connectionTimeout = connectionTimeout
        self.__sslContext = sslContext  # coffer: mutual TLS

    def bind(self):
        self.__socket = socket.socket(self.__hostAddrType, socket.SOCK_STREAM)
        self.__socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.__sendBufferSize)
        self.__socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.__recvBufferSize)
        self.__socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.__socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.__socket.setblocking(0)
        self.__socket.bind((self.__host, self.__port))
        self.__socket.listen(5)
        self.__fileno = self.__socket.fileno()
        self.__poller.subscribe(self.__fileno,
                                self.__onNewConnection,
                                POLL_EVENT_TYPE.READ | POLL_EVENT_TYPE.ERROR)
        self.__state = SERVER_STATE.BINDED

    def unbind(self):
        self.__state = SERVER_STATE.UNBINDED
        if self.__fileno is not None:
            self.__poller.unsubscribe(self.__fileno)
            self.__fileno = None
        if self.__socket is not None:
            self.__socket.close()

    def __onNewConnection(self, descr, event):
        if event & POLL_EVENT_TYPE.READ:
            try:
                sock, addr = self.__socket.accept()
            except socket.error as e:
                # coffer: only a broken listening socket unbinds it. Upstream also
                # unbound on EMFILE, ECONNABORTED and the like, so one connection
                # reset at the wrong moment (or a burst that hit the fd limit)
                # stopped the node accepting peers until it restarted.
                if e.errno in (errno.EBADF, errno.EINVAL, errno.ENOTSOCK):
                    self.unbind()
                    return
                if e.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                    logger.warning('raft accept failed: %s', e)
                return
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.__sendBufferSize)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.__recvBufferSize)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.setblocking(0)
                if self.__sslContext is not None:
                    # coffer: the handshake runs in the connection, on poller events.
                    sock = wrapConnected(self.__sslContext, sock, serverSide=True)
                conn = TcpConnection(
                    poller=self.__poller,
                    socket=sock,
                    timeout=self.__connectionTimeout,
                    sendBufferSize=self.__sendBufferSize,
                    recvBufferSize=self.__recvBufferSize,
                    keepalive=self.__keepalive,
                    sslContext=self.__sslContext,
                )
                self.__onNewConnectionCallback(conn)
            except (socket.error, ValueError) as e:
                # coffer: a failure on the accepted socket closes it, not the server.
                logger.warning('closing an accepted raft connection: %s', e)
                try:
                    sock.close()
                except socket.error:
                    pass
                return

        if event & POLL_EVENT_TYPE.ERROR:
            self.unbind()
            return
