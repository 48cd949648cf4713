import time
import socket
import ssl
import logging
from sys import platform

# coffer: frames and messages are consensus.wire's (strict JSON, length cap),
# not zlib(pickle).
from consensus import wire

logger = logging.getLogger(__name__)

from .poller import POLL_EVENT_TYPE
from .monotonic import monotonic as monotonicTime


class CONNECTION_STATE:
    DISCONNECTED = 0
    CONNECTING = 1
    CONNECTED = 2

def _getAddrType(addr):
    try:
        socket.inet_aton(addr)
        return socket.AF_INET
    except socket.error:
        pass
    try:
        socket.inet_pton(socket.AF_INET6, addr)
        return socket.AF_INET6
    except socket.error:
        pass
    raise Exception('unknown address type')

import socket

def set_keepalive_linux(sock, after_idle_sec=1, interval_sec=3, max_fails=5):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, after_idle_sec)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, interval_sec)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, max_fails)

def set_keepalive_osx(sock, after_idle_sec=1, interval_sec=3, max_fails=5):
    TCP_KEEPALIVE = 0x10
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, TCP_KEEPALIVE, interval_sec)

def set_keepalive_windows(sock, after_idle_sec=1, interval_sec=3, max_fails=5):
    sock.ioctl(socket.SIO_KEEPALIVE_VALS, (1, after_idle_sec * 1000, interval_sec * 1000))

def set_keepalive(sock, after_idle_sec=1, interval_sec=3, max_fails=5):
    if platform == "linux" or platform == "linux2":
        set_keepalive_linux(sock, after_idle_sec, interval_sec, max_fails)
    elif platform == "darwin":
        set_keepalive_osx(sock, after_idle_sec, interval_sec, max_fails)
    elif platform == "win32":
        set_keepalive_windows(sock, after_idle_sec, interval_sec, max_fails)


def wrapConnected(sslContext, sock, serverSide):
    """coffer: ``sock`` wrapped for TLS (handshake still to do), or OSError with
    nothing left unclosed.

    CPython before 3.12 (gh-113280) leaks the SSLSocket ``wrap_socket`` makes
    when the peer has already reset the connection: its connected check's
    ``recv(1)`` raises ECONNRESET and nothing closes the new socket, which then
    owns the file descriptor (the plain one is detached). A socket that is no
    longer connected raises here instead, still owning its descriptor, so the
    caller's close releases it."""
    sock.getpeername()  # OSError (ENOTCONN) once a reset has been received
    return sslContext.wrap_socket(sock, server_side=serverSide, do_handshake_on_connect=False)


class TcpConnection(object):

    def __init__(self, poller, onMessageReceived = None, onConnected = None, onDisconnected = None,
                 socket=None, timeout=10.0, sendBufferSize = 2 ** 13, recvBufferSize = 2 ** 13,
                 keepalive=None, sourceHost=None, sslContext=None):
        self.sendRandKey = None
        self.recvRandKey = None
        self.recvLastTimestamp = 0
        self.encryptor = None

        self.__socket = socket
        self.__frames = wire.FrameBuffer(wire.HANDSHAKE_FRAME_BYTES)
        self.__writeBuffer = bytes()
        self.__lastReadTime = monotonicTime()
        self.__timeout = timeout
        self.__poller = poller
        self.__keepalive = keepalive
        # coffer: outgoing connections are bound to this host (port 0) so they
        # leave from the node's cluster address, not the kernel's choice.
        self.__sourceHost = sourceHost
        # coffer: mutual TLS. An accepted socket arrives already wrapped (its
        # handshake still to do); an outgoing one is wrapped once TCP connects.
        self.__sslContext = sslContext
        self.__handshaking = sslContext is not None and socket is not None
        if socket is not None:
            self.__socket = socket
            self.__fileno = socket.fileno()
            self.__state = CONNECTION_STATE.CONNECTED
            self.setSockoptKeepalive()
            self.__poller.subscribe(self.__fileno,
                                     self.__processConnection,
                                     POLL_EVENT_TYPE.READ | POLL_EVENT_TYPE.WRITE | POLL_EVENT_TYPE.ERROR)
        else:
            self.__state = CONNECTION_STATE.DISCONNECTED
            self.__fileno = None
            self.__socket = None

        self.__onMessageReceived = onMessageReceived
        self.__onConnected = onConnected
        self.__onDisconnected = onDisconnected
        self.__sendBufferSize = sendBufferSize
        self.__recvBufferSize = recvBufferSize

    def setSockoptKeepalive(self):
        if self.__socket is None:
            return
        if self.__keepalive is None:
            return
        set_keepalive(
            self.__socket,
            self.__keepalive[0],
            self.__keepalive[1],
            self.__keepalive[2],
        )

    def peerCertificate(self):
        """coffer: the peer's TLS certificate (DER) once the handshake is done, else None."""
        if self.__handshaking or not isinstance(self.__socket, ssl.SSLSocket):
            return None
        try:
            return self.__socket.getpeercert(binary_form=True)
        except (ValueError, OSError):
            return None

    def setOnConnectedCallback(self, onConnected):
        self.__onConnected = onConnected

    def setOnMessageReceivedCallback(self, onMessageReceived):
        self.__onMessageReceived = onMessageReceived

    def setOnDisconnectedCallback(self, onDisconnected):
        self.__onDisconnected = onDisconnected

    def connect(self, host, port):
        if host is None:
            return False
        self.__state = CONNECTION_STATE.DISCONNECTED
        self.__fileno = None
        self.__socket = socket.socket(_getAddrType(host), socket.SOCK_STREAM)
        self.__handshaking = False
        if self.__sourceHost:
            try:
                self.__socket.bind((self.__sourceHost, 0))
            except socket.error:
                pass  # connect from the kernel's choice rather than not at all
        self.__socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.__sendBufferSize)
        self.__socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.__recvBufferSize)
        self.__socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.setSockoptKeepalive()
        self.__socket.setblocking(0)
        self.__frames = wire.FrameBuffer(wire.HANDSHAKE_FRAME_BYTES)
        self.__writeBuffer = bytes()
        self.__lastReadTime = monotonicTime()

        try:
            self.__socket.connect((host, port))
        except socket.error as e:
            if e.errno not in (socket.errno.EINPROGRESS, socket.errno.EWOULDBLOCK):
                return False
        self.__fileno = self.__socket.fileno()
        self.__state = CONNECTION_STATE.CONNECTING
        self.__poller.subscribe(self.__fileno,
                                 self.__processConnection,
                                 POLL_EVENT_TYPE.READ | POLL_EVENT_TYPE.WRITE | POLL_EVENT_TYPE.ERROR)
        return True

    @property
    def maxFrame(self):
        """coffer: the largest frame accepted (small until the peer is identified)."""
        return self.__frames.cap

    @maxFrame.setter
    def maxFrame(self, cap):
        self.__frames.cap = cap

    def send(self, message):
        data = wire.encode_message(message, self.sendRandKey or None)
        if self.encryptor:
            data = self.encryptor.encrypt_at_time(data, int(monotonicTime()))
        data = wire.frame(data)
        self.__writeBuffer += data
        self.__trySendBuffer()

    def fileno(self):
        return self.__fileno

    def disconnect(self):
        needCallDisconnect = False
        if self.__onDisconnected is not None and self.__state != CONNECTION_STATE.DISCONNECTED:
            needCallDisconnect = True
        self.sendRandKey = None
        self.recvRandKey = None
        self.recvLastTimestamp = 0
        if self.__socket is not None:
            self.__socket.close()
            self.__socket = None
        if self.__fileno is not None:
            self.__poller.unsubscribe(self.__fileno)
            self.__fileno = None
        self.__writeBuffer = bytes()
        self.__frames = wire.FrameBuffer(wire.HANDSHAKE_FRAME_BYTES)
        self.__state = CONNECTION_STATE.DISCONNECTED
        if needCallDisconnect:
            self.__onDisconnected()

    def getSendBufferSize(self):
        return len(self.__writeBuffer)

    def __startTls(self):
        """coffer: wrap the connected socket for the client side of mutual TLS."""
        self.__socket = wrapConnected(self.__sslContext, self.__socket, serverSide=False)
        self.__handshaking = True

    def __handshake(self):
        """coffer: advance the TLS handshake; True once it is done."""
        try:
            self.__socket.do_handshake()
        except ssl.SSLWantReadError:
            self.__poller.subscribe(self.__fileno, self.__processConnection,
                                    POLL_EVENT_TYPE.READ | POLL_EVENT_TYPE.ERROR)
            return False
        except ssl.SSLWantWriteError:
            self.__poller.subscribe(self.__fileno, self.__processConnection,
                                    POLL_EVENT_TYPE.READ | POLL_EVENT_TYPE.WRITE | POLL_EVENT_TYPE.ERROR)
            return False
        except (ssl.SSLError, OSError, ValueError) as exc:
            logger.warning('closing a raft connection: TLS handshake failed: %s', exc)
            self.disconnect()
            return False
        self.__handshaking = False
        self.__lastReadTime = monotonicTime()
        self.__poller.subscribe(self.__fileno, self.__processConnection,
                                POLL_EVENT_TYPE.READ | POLL_EVENT_TYPE.WRITE | POLL_EVENT_TYPE.ERROR)
        return True

    def __processConnection(self, descr, eventType):
        poller = self.__poller
        if descr != self.__fileno:
            poller.unsubscribe(descr)
            return

        if eventType & POLL_EVENT_TYPE.ERROR:
            self.disconnect()
            return

        self.__processConnectionTimeout()
        if self.state == CONNECTION_STATE.DISCONNECTED:
            return

        if eventType & POLL_EVENT_TYPE.READ or eventType & POLL_EVENT_TYPE.WRITE:
            # coffer: SO_ERROR only tells whether a non-blocking connect failed; on an
            # open connection recv/send raise and the poller reports ERROR. (Every
            # system call here lets the event loop's thread take the GIL.)
            if self.__state == CONNECTION_STATE.CONNECTING and \
                    self.__socket.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self.disconnect()
                return

            if self.__sslContext is not None and self.__state == CONNECTION_STATE.CONNECTING \
                    and not self.__handshaking and not isinstance(self.__socket, ssl.SSLSocket):
                try:
                    self.__startTls()
                except (ssl.SSLError, OSError, ValueError) as exc:
                    logger.warning('closing a raft connection: %s', exc)
                    self.disconnect()
                    return
            if self.__handshaking:
                if not self.__handshake():
                    return
                if self.__state != CONNECTION_STATE.CONNECTING:
                    # accepted side: the peer's first bytes may already be decrypted
                    eventType |= POLL_EVENT_TYPE.READ

            if self.__state == CONNECTION_STATE.CONNECTING:
                if self.__onConnected is not None:
                    self.__onConnected()
                if self.__state == CONNECTION_STATE.DISCONNECTED:
                    return
                self.__state = CONNECTION_STATE.CONNECTED
                self.__lastReadTime = monotonicTime()
                return

        if eventType & POLL_EVENT_TYPE.WRITE:
            self.__trySendBuffer()
            if self.__state == CONNECTION_STATE.DISCONNECTED:
                return
            event = POLL_EVENT_TYPE.READ | POLL_EVENT_TYPE.ERROR
            if len(self.__writeBuffer) > 0:
                event |= POLL_EVENT_TYPE.WRITE
            poller.subscribe(descr, self.__processConnection, event)

        while eventType & POLL_EVENT_TYPE.READ:
            self.__tryReadBuffer()
            if self.__state == CONNECTION_STATE.DISCONNECTED:
                return

            while True:
                message = self.__processParseMessage()
                if message is None:
                    break
                if self.__onMessageReceived is not None:
                    self.__onMessageReceived(message)
                if self.__state == CONNECTION_STATE.DISCONNECTED:
                    return
            # coffer: TLS may hold decrypted bytes the poller cannot see.
            pending = getattr(self.__socket, 'pending', None)
            if pending is None or not pending():
                break

    def __processConnectionTimeout(self):
        if monotonicTime() - self.__lastReadTime > self.__timeout:
            self.disconnect()
            return

    def __trySendBuffer(self):
        self.__processConnectionTimeout()
        if self.state == CONNECTION_STATE.DISCONNECTED:
            return
        while self.__processSend():
            pass

    def __processSend(self):
        if not self.__writeBuffer or self.__handshaking or \
                (self.__sslContext is not None and not isinstance(self.__socket, ssl.SSLSocket)):
            return False  # coffer: nothing leaves before the TLS handshake is done
        try:
            res = self.__socket.send(self.__writeBuffer)
            if res < 0:
                self.disconnect()
                return False
            if res == 0:
                return False
            self.__writeBuffer = self.__writeBuffer[res:]
            return True
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return False
        except socket.error as e:
            if e.errno not in (socket.errno.EAGAIN, socket.errno.EWOULDBLOCK):
                self.disconnect()
            return False

    def __tryReadBuffer(self):
        # coffer: stop reading once a frame within the cap cannot need more
        # (the parser then refuses an oversized one).
        # coffer: and once what is buffered ends at a frame boundary: the poller is
        # level-triggered, so bytes still in the socket are read at its next poll,
        # and a read that ends in EAGAIN (raised as SSLWantReadError) costs a system
        # call and an exception per message. Bytes TLS already decrypted are
        # drained by the caller (``pending``).
        while self.__frames.wants_more() and self.__processRead():
            if self.__frames.at_frame_boundary():
                break
        self.__lastReadTime = monotonicTime()

    def __processRead(self):
        if self.__handshaking:
            return False
        try:
            incoming = self.__socket.recv(self.__recvBufferSize)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return False
        except socket.error as e:
            if e.errno not in (socket.errno.EAGAIN, socket.errno.EWOULDBLOCK):
                self.disconnect()
            return False
        if not incoming:
            self.disconnect()
            return False
        self.__frames.feed(incoming)
        return True

    def __processParseMessage(self):
        # coffer: the length is checked against the cap before anything of the
        # frame is buffered; the message is decoded strictly (consensus.wire).
        try:
            data = self.__frames.next_frame()
            if data is None:
                return None
            if self.encryptor:
                dataTimestamp = self.encryptor.extract_timestamp(data)
                if dataTimestamp < self.recvLastTimestamp:
                    raise wire.WireError('replayed or reordered frame')
                self.recvLastTimestamp = dataTimestamp
                # Unfortunately we can't get a timestamp and data in one go
                data = self.encryptor.decrypt(data)
            message = wire.decode_message(data, self.recvRandKey or None)
        except Exception as exc:
            logger.warning('closing a raft connection: %s', type(exc).__name__ if not isinstance(exc, wire.WireError) else exc)
            self.disconnect()
            return None
        return message

    @property
    def state(self):
        return self.__state
