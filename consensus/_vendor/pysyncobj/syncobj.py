import time
import random
import os
import sys
import threading
import weakref
import collections
import functools
import struct
import logging
import copy
import types
try:
    import Queue
    is_py3 = False

    def iteritems(v):
        return v.iteritems()
except ImportError:  # python3
    import queue as Queue
    is_py3 = True
    xrange = range

    def iteritems(v):
        return v.items()

import json

from .dns_resolver import globalDnsResolver
from .poller import createPoller

try:
    from .pipe_notifier import PipeNotifier
    PIPE_NOTIFIER_ENABLED = True
except ImportError:
    PIPE_NOTIFIER_ENABLED = False

from .config import SERIALIZER_STATE
from .node import Node, TCPNode
from .transport import Transport, TCPTransport, TransportNotReadyError
from .journal import createJournal
from .config import SyncObjConf, FAIL_REASON
from .encryptor import HAS_CRYPTO, getEncryptor
from .version import VERSION
from .fast_queue import FastQueue
from .monotonic import monotonic as monotonicTime

logger = logging.getLogger(__name__)


class _RAFT_STATE:
    FOLLOWER = 0
    CANDIDATE = 1
    LEADER = 2

class _COMMAND_TYPE:
    REGULAR = 0
    NO_OP = 1
    MEMBERSHIP = 2
    VERSION = 3

_bchr = functools.partial(struct.pack, 'B')


class SyncObjException(Exception):
    def __init__(self, errorCode, *args, **kwargs):
        Exception.__init__(self, errorCode, *args, **kwargs)
        self.errorCode = errorCode

class SyncObjExceptionWrongVer(SyncObjException):
    def __init__(self, ver):
        SyncObjException.__init__(self, 'wrongVer')
        self.ver = ver

class SyncObjConsumer(object):
    def __init__(self):
        self._syncObj = None
        self.__properies = set()
        for key in self.__dict__:
            self.__properies.add(key)

    def _destroy(self):
        self._syncObj = None

    def _serialize(self):
        return dict([(k, v) for k, v in iteritems(self.__dict__) if k not in self.__properies])

    def _deserialize(self, data):
        for k, v in iteritems(data):
            self.__dict__[k] = v


# https://github.com/bakwc/PySyncObj

class SyncObj(object):
    def __init__(self, selfNode, otherNodes, conf=None, consumers=None, nodeClass = TCPNode, transport = None, transportClass = TCPTransport):
        """
        Main SyncObj class, you should inherit your own class from it.

        :param selfNode: object representing the self-node or address of the current node server 'host:port'
        :type selfNode: Node or str
        :param otherNodes: objects representing the other nodes or addresses of partner nodes ['host1:port1', 'host2:port2', ...]
        :type otherNodes: iterable of Node or iterable of str
        :param conf: configuration object
        :type conf: SyncObjConf
        :param consumers: objects to be replicated
        :type consumers: list of SyncObjConsumer inherited objects
        :param nodeClass: class used for representation of nodes
        :type nodeClass: class
        :param transport: transport object; if None, transportClass is used to initialise such an object
        :type transport: Transport or None
        :param transportClass: the Transport subclass to be used for transferring messages to and from other nodes
        :type transportClass: class
        """

        if conf is None:
            self.__conf = SyncObjConf()
        else:
            self.__conf = conf

        self.__conf.validate()

        if self.__conf.password is not None:
            if not HAS_CRYPTO:
                raise ImportError("Please install 'cryptography' module")
            self.__encryptor = getEncryptor(self.__conf.password)
        else:
            self.__encryptor = None

        consumers = consumers or []
        newConsumers = []
        for c in consumers:
            if not isinstance(c, SyncObjConsumer) and getattr(c, '_consumer', None):
                c = c._consumer()
            if not isinstance(c, SyncObjConsumer):
                raise SyncObjException('Consumers must be inherited from SyncObjConsumer')
            newConsumers.append(c)
        consumers = newConsumers

        self.__consumers = consumers

        origSelfNode = selfNode
        if not isinstance(selfNode, Node) and selfNode is not None:
            selfNode = nodeClass(selfNode)
        self.__selfNode = selfNode
        self.__otherNodes = set() # set of Node
        for otherNode in otherNodes:
            if otherNode == origSelfNode:
                continue
            if not isinstance(otherNode, Node):
                otherNode = nodeClass(otherNode)
            self.__otherNodes.add(otherNode)
        self.__readonlyNodes = set() # set of Node
        self.__connectedNodes = set() # set of Node
        self.__nodeClass = nodeClass

        self.__raftState = _RAFT_STATE.FOLLOWER
        self.__raftCurrentTerm = 0
        self.__votedForNodeId = None
        self.__votesCount = 0
        self.__raftLeader = None
        self.__raftElectionDeadline = monotonicTime() + self.__generateRaftTimeout()
        # Set while a leadership transfer (Raft 'TimeoutNow') is pending, to stop
        # the outgoing leader's heartbeats from postponing the forced election.
        self.__transferInProgress = False
        self.__raftLog = createJournal(self.__conf.journalFile)
        if len(self.__raftLog) == 0:
            self.__raftLog.add(_bchr(_COMMAND_TYPE.NO_OP), 1, self.__raftCurrentTerm)
        # Restore raft persistent state (see raft paper §5 - currentTerm and votedFor
        # must survive restarts, otherwise already-committed entries may be overwritten
        # by a stale member after a simultaneous restart of the cluster). The max() with
        # the last log term covers journals written by versions that did not store the
        # term: currentTerm is always >= the term of the last log entry.
        self.__raftCurrentTerm = max(self.__raftLog.getCurrentTerm(), self.__getCurrentLogTerm())
        self.__votedForNodeId = self.__raftLog.getVotedForNodeId()
        self.__raftCommitIndex = self.__raftLog.getRaftCommitIndex()
        self.__raftLastApplied = 1
        self.__raftNextIndex = {}
        self.__lastResponseTime = {}
        self.__raftMatchIndex = {}
        self.__lastSerializedTime = monotonicTime()
        self.__lastSerializedEntry = None
        self.__forceLogCompaction = False
        self.__leaderCommitIndex = None
        self.__onReadyCalled = False
        self.__changeClusterIDx = None
        self.__noopIDx = None
        self.__destroying = False
        self.__recvTransmission = ''
        # coffer: PreVote, leader stickiness and the leader lease (thesis 9.6, 6.4.1).
        self.__preVoteTerm = None  # the term this node asks pre-votes for, if any
        self.__preVotesCount = 0
        self.__lastLeaderContact = None  # when we last accepted the leader's append
        self.__leaseStamps = {}  # follower -> latest of our send stamps it echoed
        self.__leaseVoided = False  # set while a leadership transfer is under way
        self.__leaderLeaseStamp = None  # the leader's latest send stamp we received
        # coffer: followers whose log the leader is still matching (a reset came
        # back): node -> when entries were last sent to it (0.0: not yet).
        self.__probing = {}

        self.__onTickCallbacks = []
        self.__onTickCallbacksLock = threading.Lock()

        self.__startTime = monotonicTime()
        self.__numOneSecondDumps = 0
        globalDnsResolver().setTimeouts(self.__conf.dnsCacheTime, self.__conf.dnsFailCacheTime)
        globalDnsResolver().setPreferredAddrFamily(self.__conf.preferredAddrType)
        # coffer: the injected snapshot store replaces the (pickling) Serializer.
        if self.__conf.snapshotStore is None:
            raise SyncObjException('coffer: SyncObjConf(snapshotStore=...) is required')
        self.__serializer = self.__conf.snapshotStore
        self.__lastInitTryTime = 0
        self._poller = createPoller(self.__conf.pollerType)

        if transport is not None:
            self.__transport = transport
        else:
            self.__transport = transportClass(self, self.__selfNode, self.__otherNodes)
        self.__transport.setOnNodeConnectedCallback(self.__onNodeConnected)
        self.__transport.setOnNodeDisconnectedCallback(self.__onNodeDisconnected)
        self.__transport.setOnMessageReceivedCallback(self.__onMessageReceived)
        self.__transport.setOnReadonlyNodeConnectedCallback(self.__onReadonlyNodeConnected)
        self.__transport.setOnReadonlyNodeDisconnectedCallback(self.__onReadonlyNodeDisconnected)
        self.__transport.setOnUtilityMessageCallback('status', self._getStatus)
        self.__transport.setOnUtilityMessageCallback('add', self._addNodeToCluster)
        self.__transport.setOnUtilityMessageCallback('remove', self._removeNodeFromCluster)
        self.__transport.setOnUtilityMessageCallback('set_version', self._setCodeVersion)
        self.__transport.setOnUtilityMessageCallback('transfer', self._transferLeadership)

        self._methodToID = {}
        self._idToMethod = {}
        self._idToConsumer = {}

        methods = [m for m in dir(self) if callable(getattr(self, m)) and \
                   getattr(getattr(self, m), 'replicated', False) and \
                   m != getattr(getattr(self, m), 'origName')]
        currMethodID = 0
        self.__selfCodeVersion = 0
        self.__currentVersionFuncNames = {}

        methodsToEnumerate = []

        for method in methods:
            ver = getattr(getattr(self, method), 'ver')
            methodsToEnumerate.append((ver, 0, method, self))

        for consumerNum, consumer in enumerate(consumers):
            consumerMethods = [m for m in dir(consumer) if callable(getattr(consumer, m)) and\
                               getattr(getattr(consumer, m), 'replicated', False) and \
                               m != getattr(getattr(consumer, m), 'origName')]
            for method in consumerMethods:
                ver = getattr(getattr(consumer, method), 'ver')
                methodsToEnumerate.append((ver, consumerNum + 1, method, consumer))
            consumer._syncObj = self

        for ver, _, method, obj in sorted(methodsToEnumerate):
            self.__selfCodeVersion = max(self.__selfCodeVersion, ver)
            if obj is self:
                self._methodToID[method] = currMethodID
            else:
                self._methodToID[(id(obj), method)] = currMethodID
            self._idToMethod[currMethodID] = getattr(obj, method)
            currMethodID += 1

        self.__onSetCodeVersion(0)

        self.__thread = None
        self.__mainThread = None
        self.__initialised = None
        self.__commandsQueue = FastQueue(self.__conf.commandsQueueSize)
        if not self.__conf.appendEntriesUseBatch and PIPE_NOTIFIER_ENABLED:
            self.__pipeNotifier = PipeNotifier(self._poller)
        self.__needLoadDumpFile = True

        self.__lastReadonlyCheck = 0
        self.__newAppendEntriesTime = 0

        self.__commandsWaitingCommit = collections.defaultdict(list)  # logID => [(termID, callback), ...]
        self.__commandsLocalCounter = 0
        self.__commandsWaitingReply = {}  # commandLocalCounter => callback

        self.__properies = set()
        for key in self.__dict__:
            self.__properies.add(key)

        self.__enabledCodeVersion = 0

        if self.__conf.autoTick:
            self.__mainThread = threading.current_thread()
            self.__initialised = threading.Event()
            self.__thread = threading.Thread(target=SyncObj._autoTickThread, args=(weakref.proxy(self),))
            self.__thread.start()
            self.__initialised.wait()
            # while not self.__initialised.is_set():
            #     pass
        else:
            try:
                while not self.__transport.ready:
                    self.__transport.tryGetReady()
            except TransportNotReadyError:
                logger.exception('failed to perform initialization')
                raise SyncObjException('BindError') # Backwards compatibility

    def destroy(self):
        """
        Correctly destroy SyncObj. Stop autoTickThread, close connections, etc.
        """
        if self.__conf.autoTick:
            self.__destroying = True
        else:
            self._doDestroy()

    def tick_thread_alive(self):
        """
        Check if the tick thread is alive.
        """
        if self.__thread and self.__thread.is_alive():
            return True
        return False

    def destroy_synchronous(self):
        """
        Correctly destroy SyncObj. Stop autoTickThread, close connections, etc. and ensure the threads are gone.
        """
        self.destroy()
        self.__thread.join()

    def waitReady(self):
        """
        Waits until the transport is ready for operation.

        :raises TransportNotReadyError: if the transport fails to get ready
        """
        self.__transport.waitReady()

    def waitBinded(self):
        """
        Waits until initialized (binded port).
        If success - just returns.
        If failed to initialized after conf.maxBindRetries - raise SyncObjException.
        """
        try:
            self.__transport.waitReady()
        except TransportNotReadyError:
            raise SyncObjException('BindError')
        if not self.__transport.ready:
            raise SyncObjException('BindError')

    def _destroy(self):
        self.destroy()

    def _doDestroy(self):
        self.__transport.destroy()
        # coffer: close the notifier pipe (leaked by the library).
        pipeNotifier = getattr(self, '_SyncObj__pipeNotifier', None)
        if pipeNotifier is not None:
            self._poller.unsubscribe(pipeNotifier.fileno())
            pipeNotifier.close()
        for consumer in self.__consumers:
            consumer._destroy()
        self.__raftLog._destroy()

    def getCodeVersion(self):
        return self.__enabledCodeVersion

    def setCodeVersion(self, newVersion, callback = None):
        """Switch to a new code version on all cluster nodes. You
        should ensure that cluster nodes are updated, otherwise they
        won't be able to apply commands.

        :param newVersion: new code version
        :type int
        :param callback: will be called on success or fail
        :type callback: function(`FAIL_REASON <#pysyncobj.FAIL_REASON>`_, None)
        """
        assert isinstance(newVersion, int)
        if newVersion > self.__selfCodeVersion:
            raise Exception('wrong version, current version is %d, requested version is %d' % (self.__selfCodeVersion, newVersion))
        if newVersion < self.__enabledCodeVersion:
            raise Exception('wrong version, enabled version is %d, requested version is %d' % (self.__enabledCodeVersion, newVersion))
        self._applyCommand(_encodeVersion(newVersion), callback, _COMMAND_TYPE.VERSION)

    def addNodeToCluster(self, node, callback = None):
        """Add single node to cluster (dynamic membership changes). Async.
        You should wait until node successfully added before adding
        next node.

        :param node: node object or 'nodeHost:nodePort'
        :type node: Node | str
        :param callback: will be called on success or fail
        :type callback: function(`FAIL_REASON <#pysyncobj.FAIL_REASON>`_, None)
        """
        if not self.__conf.dynamicMembershipChange:
            raise Exception('dynamicMembershipChange is disabled')
        if not isinstance(node, Node):
            node = self.__nodeClass(node)
        self._applyCommand(_encodeMembership('add', node.id), callback, _COMMAND_TYPE.MEMBERSHIP)

    def removeNodeFromCluster(self, node, callback = None):
        """Remove single node from cluster (dynamic membership changes). Async.
        You should wait until node successfully added before adding
        next node.

        :param node: node object or 'nodeHost:nodePort'
        :type node: Node | str
        :param callback: will be called on success or fail
        :type callback: function(`FAIL_REASON <#pysyncobj.FAIL_REASON>`_, None)
        """
        if not self.__conf.dynamicMembershipChange:
            raise Exception('dynamicMembershipChange is disabled')
        if not isinstance(node, Node):
            node = self.__nodeClass(node)
        self._applyCommand(_encodeMembership('rem', node.id), callback, _COMMAND_TYPE.MEMBERSHIP)

    def _setCodeVersion(self, args, callback):
        self.setCodeVersion(args[0], callback)

    def _addNodeToCluster(self, args, callback):
        self.addNodeToCluster(args[0], callback)

    def _removeNodeFromCluster(self, args, callback):
        node = args[0]
        if node == self.__selfNode.address:
            callback(None, FAIL_REASON.REQUEST_DENIED)
        else:
            self.removeNodeFromCluster(node, callback)

    def transferLeadership(self, node=None, callback=None):
        """Gracefully transfer raft leadership to another node (Raft 'TimeoutNow').

        Must be called on the current leader. The target node must be fully
        caught up (matchIndex == leader's last log index), otherwise the
        request is denied. If node is None, the most caught-up connected
        follower is selected automatically. Async and best-effort: a
        successful callback only means the request was sent; poll
        getStatus()['leader'] to confirm the transfer completed.

        :param node: target node object or 'nodeHost:nodePort' (None = auto)
        :type node: Node | str | None
        :param callback: will be called on success or fail
        :type callback: function(`FAIL_REASON <#pysyncobj.FAIL_REASON>`_, None)
        """
        if self.__raftState != _RAFT_STATE.LEADER:
            self.__callErrCallback(FAIL_REASON.NOT_LEADER, callback)
            return
        if node is not None and not isinstance(node, Node):
            node = self.__nodeClass(node)
        if node is None:
            candidates = [(self.__raftMatchIndex.get(n, 0), n.id, n)
                          for n in self.__otherNodes if n in self.__connectedNodes]
            if not candidates:
                self.__callErrCallback(FAIL_REASON.REQUEST_DENIED, callback)
                return
            node = max(candidates)[2]
        if node == self.__selfNode or node not in self.__otherNodes:
            self.__callErrCallback(FAIL_REASON.REQUEST_DENIED, callback)
            return
        if self.__raftMatchIndex.get(node, 0) != self.__getCurrentLogIndex():
            # target is not fully synced - transferring would fail the election
            self.__callErrCallback(FAIL_REASON.REQUEST_DENIED, callback)
            return
        # coffer: the target may now win without waiting out the followers'
        # stickiness, so this leader can no longer promise a lease.
        self.__leaseVoided = True
        self.__transport.send(node, {
            'type': 'timeout_now',
            'term': self.__raftCurrentTerm,
        })
        if callback is not None:
            callback(None, FAIL_REASON.SUCCESS)

    def _transferLeadership(self, args, callback):
        self.transferLeadership(args[0] if args and args[0] else None, callback)

    def __onSetCodeVersion(self, newVersion):
        methods = [m for m in dir(self) if callable(getattr(self, m)) and\
                   getattr(getattr(self, m), 'replicated', False) and \
                   m != getattr(getattr(self, m), 'origName')]

        self.__currentVersionFuncNames = {}

        funcVersions = collections.defaultdict(set)
        for method in methods:
            ver = getattr(getattr(self, method), 'ver')
            origFuncName = getattr(getattr(self, method), 'origName')
            funcVersions[origFuncName].add(ver)

        for consumer in self.__consumers:
            consumerID = id(consumer)
            consumerMethods = [m for m in dir(consumer) if callable(getattr(consumer, m)) and \
                               getattr(getattr(consumer, m), 'replicated', False)]
            for method in consumerMethods:
                ver = getattr(getattr(consumer, method), 'ver')
                origFuncName = getattr(getattr(consumer, method), 'origName')
                funcVersions[(consumerID, origFuncName)].add(ver)

        for funcName, versions in iteritems(funcVersions):
            versions = sorted(list(versions))
            for v in versions:
                if v > newVersion:
                    break
                realFuncName = funcName[1] if isinstance(funcName, tuple) else funcName
                self.__currentVersionFuncNames[funcName] = realFuncName + '_v' + str(v)

    def _getFuncName(self, funcName):
        return self.__currentVersionFuncNames[funcName]

    def _applyCommand(self, command, callback, commandType = None):
        try:
            if commandType is None:
                self.__commandsQueue.put_nowait((command, callback))
            else:
                self.__commandsQueue.put_nowait((_bchr(commandType) + command, callback))
            if not self.__conf.appendEntriesUseBatch and PIPE_NOTIFIER_ENABLED:
                self.__pipeNotifier.notify()
        except Queue.Full:
            self.__callErrCallback(FAIL_REASON.QUEUE_FULL, callback)

    def _checkCommandsToApply(self):
        startTime = monotonicTime()

        while monotonicTime() - startTime < self.__conf.appendEntriesPeriod:
            if self.__raftLeader is None and self.__conf.commandsWaitLeader:
                break
            try:
                command, callback = self.__commandsQueue.get_nowait()
            except Queue.Empty:
                break

            requestNode, requestID = None, None
            if isinstance(callback, tuple):
                requestNode, requestID = callback

            if self.__raftState == _RAFT_STATE.LEADER:
                idx, term = self.__getCurrentLogIndex() + 1, self.__raftCurrentTerm

                if self.__conf.dynamicMembershipChange:
                    changeClusterRequest = self.__parseChangeClusterRequest(command)
                else:
                    changeClusterRequest = None

                if changeClusterRequest is None or self.__changeCluster(changeClusterRequest):

                    self.__raftLog.add(command, idx, term)

                    if requestNode is None:
                        if callback is not None:
                            self.__commandsWaitingCommit[idx].append((term, callback))
                    else:
                        self.__transport.send(requestNode, {
                            'type': 'apply_command_response',
                            'request_id': requestID,
                            'log_idx': idx,
                            'log_term': term,
                        })
                    if not self.__conf.appendEntriesUseBatch:
                        self.__sendAppendEntries()
                else:

                    if requestNode is None:
                        if callback is not None:
                            callback(None, FAIL_REASON.REQUEST_DENIED)
                    else:
                        self.__transport.send(requestNode, {
                            'type': 'apply_command_response',
                            'request_id': requestID,
                            'error': FAIL_REASON.REQUEST_DENIED,
                        })

            elif self.__raftLeader is not None:
                if requestNode is None:
                    message = {
                        'type': 'apply_command',
                        'command': command,
                    }

                    if callback is not None:
                        self.__commandsLocalCounter += 1
                        self.__commandsWaitingReply[self.__commandsLocalCounter] = callback
                        message['request_id'] = self.__commandsLocalCounter

                    self.__transport.send(self.__raftLeader, message)
                else:
                    self.__transport.send(requestNode, {
                        'type': 'apply_command_response',
                        'request_id': requestID,
                        'error': FAIL_REASON.NOT_LEADER,
                    })
            else:
                self.__callErrCallback(FAIL_REASON.MISSING_LEADER, callback)

    def _autoTickThread(self):
        try:
            self.__transport.tryGetReady()
        except TransportNotReadyError:
            logger.exception('failed to perform initialization')
            return
        finally:
            self.__initialised.set()
        time.sleep(0.1)
        try:
            while True:
                if not self.__mainThread.is_alive():
                    break
                if self.__destroying:
                    self._doDestroy()
                    break
                try:
                    self._onTick(self.__conf.autoTickPeriod)
                except Exception:
                    # log, wait a little and retry
                    logger.exception('failed _onTick in _autoTickThread')
                    time.sleep(self.__conf.autoTickPeriod)
        except ReferenceError:
            pass

    def doTick(self, timeToWait=0.0):
        """Performs single tick. Should be called manually if `autoTick <#pysyncobj.SyncObjConf.autoTick>`_ disabled

        :param timeToWait: max time to wait for next tick. If zero - perform single tick without waiting for new events.
            Otherwise - wait for new socket event and return.
        :type timeToWait: float
        """
        assert not self.__conf.autoTick
        self._onTick(timeToWait)

    def _onTick(self, timeToWait=0.0):
        if not self.__transport.ready:
            try:
                self.__transport.tryGetReady()
            except TransportNotReadyError:
                # Implicitly handled in the 'if not self.__transport.ready' below
                pass

        if not self.__transport.ready:
            time.sleep(timeToWait)
            self.__applyLogEntries()
            return

        if self.__needLoadDumpFile:
            if self.__conf.fullDumpFile is not None and os.path.isfile(self.__conf.fullDumpFile):
                self.__loadDumpFile(clearJournal=False)
            self.__needLoadDumpFile = False

        workTime = monotonicTime() - self.__startTime
        if workTime > self.__numOneSecondDumps:
            self.__numOneSecondDumps += 1
            self.__raftLog.onOneSecondTimer()

        if self.__raftState in (_RAFT_STATE.FOLLOWER, _RAFT_STATE.CANDIDATE) and self.__selfNode is not None:
            if self.__raftElectionDeadline < monotonicTime() and self.__connectedToAnyone():
                self.__raftElectionDeadline = monotonicTime() + self.__generateRaftTimeout()
                transfer = self.__transferInProgress
                self.__transferInProgress = False
                if self.__raftLeader is not None:
                    self.__raftLeader = None
                    self.__onLeaderChanged()
                if self.__conf.preVote and not transfer:
                    self.__startPreVote()
                else:
                    self.__startElection(transfer)

        if self.__raftState == _RAFT_STATE.LEADER:

            commitIdx = self.__raftCommitIndex
            nextCommitIdx = self.__raftCommitIndex
            # coffer: the leader counts itself only for entries on its own disk. A
            # single node elects itself and appends its no-op in one tick, and
            # upstream committed that entry before any fsync.
            durableIdx = self.__raftLog.durableIndex()

            while commitIdx < self.__getCurrentLogIndex():
                commitIdx += 1
                count = 1 if commitIdx <= durableIdx else 0
                for node in self.__otherNodes:
                    if self.__raftMatchIndex[node] >= commitIdx:
                        count += 1
                if count <= (len(self.__otherNodes) + 1) / 2:
                    break
                entries = self.__getEntries(commitIdx, 1)
                if not entries:
                    continue
                commitTerm = entries[0][2]
                if commitTerm != self.__raftCurrentTerm:
                    continue
                nextCommitIdx = commitIdx

            if self.__raftCommitIndex != nextCommitIdx:
                self.__raftCommitIndex = nextCommitIdx
                self.__raftLog.setRaftCommitIndex(self.__raftCommitIndex)

            self.__leaderCommitIndex = self.__raftCommitIndex
            deadline = monotonicTime() - self.__conf.leaderFallbackTimeout
            count = 1
            for node in self.__otherNodes:
                if self.__lastResponseTime[node] > deadline:
                    count += 1
            if count <= (len(self.__otherNodes) + 1) / 2:
                self.__setState(_RAFT_STATE.FOLLOWER)
                self.__raftLeader = None

        needSendAppendEntries = self.__applyLogEntries()

        if self.__raftState == _RAFT_STATE.LEADER:
            if monotonicTime() > self.__newAppendEntriesTime or needSendAppendEntries:
                self.__sendAppendEntries()

        if not self.__onReadyCalled and self.__raftLastApplied == self.__leaderCommitIndex:
            if self.__conf.onReady:
                self.__conf.onReady()
            self.__onReadyCalled = True

        self._checkCommandsToApply()
        self.__tryLogCompaction()

        with self.__onTickCallbacksLock:
            for callback in self.__onTickCallbacks:
                callback()

        if self.__raftState == _RAFT_STATE.LEADER:
            # coffer: wake up for the next append when it is due (a delayed commit
            # index, or a heartbeat), not only at the next event or timeToWait.
            timeToWait = max(0.0, min(timeToWait, self.__newAppendEntriesTime - monotonicTime()))
        self._poller.poll(timeToWait)

    def __startPreVote(self):
        """coffer: PreVote (thesis 9.6): ask whether we could win before raising the term."""
        # A candidate whose election failed is a follower again while it asks.
        self.__setState(_RAFT_STATE.FOLLOWER)
        self.__preVoteTerm = self.__raftCurrentTerm + 1
        self.__preVotesCount = 1
        for node in self.__otherNodes:
            self.__transport.send(node, {
                'type': 'request_vote',
                'pre_vote': True,
                'term': self.__preVoteTerm,
                'last_log_index': self.__getCurrentLogIndex(),
                'last_log_term': self.__getCurrentLogTerm(),
            })
        if self.__preVotesCount > (len(self.__otherNodes) + 1) / 2:
            self.__startElection(False)

    def __startElection(self, transfer):
        self.__preVoteTerm = None
        self.__raftLeader = None
        self.__setState(_RAFT_STATE.CANDIDATE)
        self.__setCurrentTerm(self.__raftCurrentTerm + 1, self.__selfNode.id)
        self.__votesCount = 1
        for node in self.__otherNodes:
            message = {
                'type': 'request_vote',
                'term': self.__raftCurrentTerm,
                'last_log_index': self.__getCurrentLogIndex(),
                'last_log_term': self.__getCurrentLogTerm(),
            }
            if transfer:
                message['transfer'] = True  # coffer: the leader asked for it (timeout_now)
            self.__transport.send(node, message)
        self.__onLeaderChanged()
        if self.__votesCount > (len(self.__otherNodes) + 1) / 2:
            self.__onBecomeLeader()

    def __inLease(self):
        """coffer: whether this node refuses (pre-)votes: it leads, or it heard
        from a live leader less than the minimum election timeout ago."""
        if self.__raftState == _RAFT_STATE.LEADER:
            return True
        contact = self.__lastLeaderContact
        return (self.__raftLeader is not None and contact is not None
                and monotonicTime() - contact < self.__conf.raftMinTimeout)

    def __logIsUpToDate(self, lastLogIdx, lastLogTerm):
        if lastLogTerm != self.__getCurrentLogTerm():
            return lastLogTerm > self.__getCurrentLogTerm()
        return lastLogIdx >= self.__getCurrentLogIndex()

    def leaseRemaining(self, duration):
        """coffer: how many seconds this leader's lease still holds (<= 0: none): a
        majority (us included) acknowledged an append we sent at that send
        time; each of those followers refuses votes for raftMinTimeout after
        receiving it, so with ``duration`` below raftMinTimeout (less a
        clock-rate margin) no other leader can exist before the expiry.
        0 when this node is not the leader. Call it on the tick thread."""
        if self.__raftState != _RAFT_STATE.LEADER or self.__leaseVoided:
            return 0.0
        if self.__noopIDx is None or self.__raftLastApplied < self.__noopIDx:
            # coffer: no lease before this term's no-op is applied: until then entries
            # of earlier terms may be committed and not applied here (an echo of a
            # refused append carries a stamp all the same).
            return 0.0
        needed = (len(self.__otherNodes) + 1) // 2  # followers besides us for a majority
        if needed == 0:
            return float('inf')
        stamps = sorted((self.__leaseStamps.get(node, 0) for node in self.__otherNodes), reverse=True)
        if stamps[needed - 1] == 0:
            return 0.0
        # Stamps are this module's clock (CLOCK_MONOTONIC_RAW, not slewed by NTP).
        return stamps[needed - 1] / 1e6 + duration - monotonicTime()

    def termStartIndex(self):
        """coffer: the log index of this leader's no-op, the first entry of its
        term (None when not leading): what comes before it was written by earlier
        leaders. Call it on the tick thread."""
        if self.__raftState != _RAFT_STATE.LEADER:
            return None
        return self.__noopIDx

    def __applyLogEntries(self):
        needSendAppendEntries = False

        if self.__raftCommitIndex > self.__raftLastApplied:
            count = self.__raftCommitIndex - self.__raftLastApplied
            entries = self.__getEntries(self.__raftLastApplied + 1, count)
            for entry in entries:
                try:
                    currentTermID = entry[2]
                    subscribers = self.__commandsWaitingCommit.pop(entry[1], [])
                    res = self.__doApplyCommand(entry[0])
                    for subscribeTermID, callback in subscribers:
                        if subscribeTermID == currentTermID:
                            callback(res, FAIL_REASON.SUCCESS)
                        else:
                            callback(None, FAIL_REASON.DISCARDED)

                    self.__raftLastApplied += 1
                except SyncObjExceptionWrongVer as e:
                    logger.error(
                        'request to switch to unsupported code version (self version: %d, requested version: %d)' %
                        (self.__selfCodeVersion, e.ver))
                # coffer: the store picks compaction points from the applied entries
                # alone, so nodes holding the same dump compact at the same index
                # (identical dumps: a snapshot transfer resumes on a new leader).
                # The entry-count trigger is taken here too, counted from the log's
                # start (the dump's index), not from the log's length.
                countDue = entry[1] - self.__raftLog[0][1] >= self.__conf.logCompactionMinEntries
                if self.__serializer.compactionPoint(entry[1], len(entry[0]), countDue):
                    self.__forceLogCompaction = True
                    break

            if not self.__conf.appendEntriesUseBatch:
                # coffer: followers learn the commit index from the next append;
                # one that carries nothing else is sent only if none leaves within
                # commitPropagationDelay (at c=1 the client's next write does): an
                # AppendEntries and its acknowledgement less per entry and follower.
                delay = self.__conf.commitPropagationDelay
                if delay > 0:
                    self.__newAppendEntriesTime = min(
                        self.__newAppendEntriesTime, monotonicTime() + delay)
                else:
                    needSendAppendEntries = True

        return needSendAppendEntries

    def addOnTickCallback(self, callback):
        with self.__onTickCallbacksLock:
            self.__onTickCallbacks.append(callback)

    def removeOnTickCallback(self, callback):
        with self.__onTickCallbacksLock:
            try:
                self.__onTickCallbacks.remove(callback)
            except ValueError:
                # callback not in list, ignore
                pass

    def isNodeConnected(self, node):
        """
        Checks if the given node is connected
        :param node: node to check
        :type node: Node
        :rtype: bool
        """
        return node in self.__connectedNodes

    @property
    def selfNode(self):
        """
        :rtype: Node
        """
        return self.__selfNode

    @property
    def otherNodes(self):
        """
        :rtype: set of Node
        """
        return self.__otherNodes.copy()

    @property
    def readonlyNodes(self):
        """
        :rtype: set of Node
        """
        return self.__readonlyNodes.copy()

    @property
    def raftLastApplied(self):
        """
        :rtype: int
        """
        return self.__raftLastApplied

    @property
    def raftCommitIndex(self):
        """
        :rtype: int
        """
        return self.__raftCommitIndex

    @property
    def raftCurrentTerm(self):
        """
        :rtype: int
        """
        return self.__raftCurrentTerm

    @property
    def hasQuorum(self):
        '''
        Does the cluster have a quorum according to this node

        :rtype: bool
        '''

        nodes = self.__otherNodes
        node_count = len(nodes)
        # Get number of connected nodes that participate in cluster quorum
        connected_count = len(nodes.intersection(self.__connectedNodes))

        if self.__selfNode is not None:
            # This node participates in cluster quorum
            connected_count += 1
            node_count += 1

        return connected_count > node_count / 2

    def getStatus(self):
        """Dumps different debug info about cluster to dict and return it"""

        status = {}
        status['version'] = VERSION
        status['revision'] = 'deprecated'
        status['self'] = self.selfNode
        status['state'] = self.__raftState
        status['leader'] = self.__raftLeader
        status['has_quorum'] = self.hasQuorum
        status['partner_nodes_count'] = len(self.__otherNodes)
        for node in self.__otherNodes:
            status['partner_node_status_server_' + node.id] = 2 if self.isNodeConnected(node) else 0
        status['readonly_nodes_count'] = len(self.__readonlyNodes)
        for node in self.__readonlyNodes:
            status['readonly_node_status_server_' + node.id] = 2 if self.isNodeConnected(node) else 0
        status['log_len'] = len(self.__raftLog)
        status['last_applied'] = self.raftLastApplied
        status['commit_idx'] = self.raftCommitIndex
        status['raft_term'] = self.raftCurrentTerm
        status['next_node_idx_count'] = len(self.__raftNextIndex)
        for node, idx in iteritems(self.__raftNextIndex):
            status['next_node_idx_server_' + node.id] = idx
        status['match_idx_count'] = len(self.__raftMatchIndex)
        for node, idx in iteritems(self.__raftMatchIndex):
            status['match_idx_server_' + node.id] = idx
        status['leader_commit_idx'] = self.__leaderCommitIndex
        status['uptime'] = int(monotonicTime() - self.__startTime)
        status['self_code_version'] = self.__selfCodeVersion
        status['enabled_code_version'] = self.__enabledCodeVersion
        return status

    def _getStatus(self, args, callback):
        callback(self.getStatus(), None)

    def printStatus(self):
        """Dumps different debug info about cluster to default logger"""
        status = self.getStatus()
        for k, v in iteritems(status):
            logger.info('%s: %s' % (str(k), str(v)))

    def _printStatus(self):
        self.printStatus()

    def forceLogCompaction(self):
        """Force to start log compaction (without waiting required time or required number of entries)"""
        self.__forceLogCompaction = True

    def _forceLogCompaction(self):
        self.forceLogCompaction()

    def __doApplyCommand(self, command):
        commandType = ord(command[:1])
        # Skip no-op and membership change commands
        if commandType == _COMMAND_TYPE.VERSION:
            ver = _decodeVersion(command[1:])
            if self.__selfCodeVersion < ver:
                raise SyncObjExceptionWrongVer(ver)
            oldVer = self.__enabledCodeVersion
            self.__enabledCodeVersion = ver
            callback = self.__conf.onCodeVersionChanged
            self.__onSetCodeVersion(ver)
            if callback is not None:
                callback(oldVer, ver)
            return

        #  This is required only after node restarts and apply journal
        # for normal case it is already done earlier and calls will be ignored
        clusterChangeRequest = self.__parseChangeClusterRequest(command)
        if clusterChangeRequest is not None:
             self.__doChangeCluster(clusterChangeRequest)
             return

        if commandType != _COMMAND_TYPE.REGULAR:
            return
        # coffer: a regular entry is the type byte and the application's own
        # bytes, handed to applyCommandPayload (no pickled method call).
        return self.applyCommandPayload(command[1:])

    def submitCommand(self, payload, callback=None):
        """coffer: replicate ``payload`` (bytes) as one regular log entry."""
        self._applyCommand(payload, callback, _COMMAND_TYPE.REGULAR)

    def applyCommandPayload(self, payload):
        """coffer: apply one committed regular entry; subclasses override it."""
        raise NotImplementedError

    def __onMessageReceived(self, node, message):

        if message['type'] == 'timeout_now' and self.__selfNode is not None:
            # Graceful leadership transfer (Raft 'TimeoutNow'): trigger an
            # immediate election, but only on request of the current leader.
            if message['term'] >= self.__raftCurrentTerm and node == self.__raftLeader:
                self.__raftElectionDeadline = 0
                self.__transferInProgress = True

        if message['type'] == 'request_vote' and self.__selfNode is not None:
            # coffer: leader stickiness; a transfer asked by the leader itself bypasses it.
            if not message.get('transfer') and self.__inLease():
                return
            if message.get('pre_vote'):
                # coffer: a pre-vote changes neither our term nor our vote.
                if message['term'] > self.__raftCurrentTerm and \
                        self.__logIsUpToDate(message['last_log_index'], message['last_log_term']):
                    self.__transport.send(node, {
                        'type': 'response_vote',
                        'pre_vote': True,
                        'term': message['term'],
                    })
                return

            if message['term'] > self.__raftCurrentTerm:
                self.__setCurrentTerm(message['term'], None)
                self.__setState(_RAFT_STATE.FOLLOWER)
                self.__raftLeader = None

            if self.__raftState in (_RAFT_STATE.FOLLOWER, _RAFT_STATE.CANDIDATE):
                lastLogTerm = message['last_log_term']
                lastLogIdx = message['last_log_index']
                if message['term'] >= self.__raftCurrentTerm:
                    if lastLogTerm < self.__getCurrentLogTerm():
                        return
                    if lastLogTerm == self.__getCurrentLogTerm() and \
                            lastLogIdx < self.__getCurrentLogIndex():
                        return
                    if self.__votedForNodeId is not None:
                        return

                    self.__setCurrentTerm(self.__raftCurrentTerm, node.id)

                    self.__raftElectionDeadline = monotonicTime() + self.__generateRaftTimeout()
                    self.__transport.send(node, {
                        'type': 'response_vote',
                        'term': message['term'],
                    })

        if message['type'] == 'append_entries' and message['term'] < self.__raftCurrentTerm \
                and self.__selfNode is not None:
            # coffer: a leader of an older term learns ours and steps down (the
            # library ignored it, leaving a node with a higher term out for good).
            self.__transport.send(node, {
                'type': 'next_node_idx',
                'next_node_idx': self.__getCurrentLogIndex() + 1,
                'reset': False,
                'success': False,
                'term': self.__raftCurrentTerm,
            })

        if message['type'] == 'append_entries' and message['term'] >= self.__raftCurrentTerm:
            # coffer: heard from a live leader (stickiness), no pre-candidacy.
            self.__lastLeaderContact = monotonicTime()
            self.__preVoteTerm = None
            if 'lease' in message:
                self.__leaderLeaseStamp = (node, message['lease'])
            if message['term'] > self.__raftCurrentTerm:
                # A new leader at a higher term supersedes any pending transfer.
                self.__transferInProgress = False
            if not self.__transferInProgress:
                # While a transfer is pending, ignore same-term heartbeats from
                # the outgoing leader so they can't postpone the forced election.
                self.__raftElectionDeadline = monotonicTime() + self.__generateRaftTimeout()
            if self.__raftLeader != node:
                self.__onLeaderChanged()
            self.__raftLeader = node
            if message['term'] > self.__raftCurrentTerm:
                self.__setCurrentTerm(message['term'], None)
            self.__setState(_RAFT_STATE.FOLLOWER)
            newEntries = message.get('entries', [])
            serialized = message.get('serialized', None)
            self.__leaderCommitIndex = leaderCommitIndex = message['commit_index']

            # Regular append entries
            if 'prevLogIdx' in message:
                transmission = message.get('transmission', None)
                if transmission is not None:
                    if transmission == 'start':
                        self.__recvTransmission = message['data']
                        self.__sendNextNodeIdx(node, success=False, reset=False)
                        return
                    elif transmission == 'process':
                        self.__recvTransmission += message['data']
                        self.__sendNextNodeIdx(node, success=False, reset=False)
                        return
                    else:
                        raise Exception('Wrong transmission type')

                prevLogIdx = message['prevLogIdx']
                prevLogTerm = message['prevLogTerm']
                prevEntries = self.__getEntries(prevLogIdx)
                if not prevEntries:
                    self.__sendNextNodeIdx(node, success=False, reset=True)
                    return
                if prevEntries[0][2] != prevLogTerm:
                    # coffer: point the leader at the first entry of the conflicting
                    # term (thesis 5.3), not one entry back per round trip: a cut-off
                    # leader's tail of uncommitted entries took seconds to unwind.
                    conflictTerm = prevEntries[0][2]
                    firstIdx = self.__raftLog[0][1]
                    idx = prevLogIdx
                    while idx - 1 > firstIdx and self.__raftLog[idx - 1 - firstIdx][2] == conflictTerm:
                        idx -= 1
                    self.__sendNextNodeIdx(node, nextNodeIdx = idx, success = False, reset=True)
                    return
                if len(prevEntries) > 1:
                    # rollback cluster changes
                    if self.__conf.dynamicMembershipChange:
                        for entry in reversed(prevEntries[1:]):
                            clusterChangeRequest = self.__parseChangeClusterRequest(entry[0])
                            if clusterChangeRequest is not None:
                                self.__doChangeCluster(clusterChangeRequest, reverse=True)

                    if prevLogIdx + 1 <= self.__raftLastApplied:
                        logger.critical(
                            'truncating already-applied log entries from index %d '
                            '(last applied: %d) - state machine may have diverged from '
                            'other cluster members', prevLogIdx + 1, self.__raftLastApplied)
                    self.__deleteEntriesFrom(prevLogIdx + 1)
                for entry in newEntries:
                    self.__raftLog.add(*entry)

                # apply cluster changes
                if self.__conf.dynamicMembershipChange:
                    for entry in newEntries:
                        clusterChangeRequest = self.__parseChangeClusterRequest(entry[0])
                        if clusterChangeRequest is not None:
                            self.__doChangeCluster(clusterChangeRequest)

                nextNodeIdx = prevLogIdx + 1
                if newEntries:
                    nextNodeIdx = newEntries[-1][1] + 1

                self.__sendNextNodeIdx(node, nextNodeIdx=nextNodeIdx, success=True)

            # Install snapshot
            elif serialized is not None:
                # coffer: chunks are acknowledged (resume, flow control); the store
                # answers True once installed, "have" when our log covers it.
                result = self.__serializer.setTransmissionData(serialized)
                if result is True:
                    self.__loadDumpFile(clearJournal=True)
                    self.__sendNextNodeIdx(node, success=True)
                elif result == 'have':
                    self.__sendNextNodeIdx(node, reset=True)
                elif result is not None:
                    self.__sendNextNodeIdx(node, snapshotAck=result)

            # If the log was truncated below the commit index, don't persist a commit
            # index covering entries that are no longer the committed ones.
            if self.__raftCommitIndex > self.__getCurrentLogIndex():
                self.__raftCommitIndex = self.__getCurrentLogIndex()

            if leaderCommitIndex > self.__raftCommitIndex:
                self.__raftCommitIndex = min(leaderCommitIndex, self.__getCurrentLogIndex())

            self.__raftLog.setRaftCommitIndex(self.__raftCommitIndex)

        if message['type'] == 'apply_command':
            if 'request_id' in message:
                self._applyCommand(message['command'], (node, message['request_id']))
            else:
                self._applyCommand(message['command'], None)

        if message['type'] == 'apply_command_response':
            requestID = message['request_id']
            error = message.get('error', None)
            callback = self.__commandsWaitingReply.pop(requestID, None)
            if callback is not None:
                if error is not None:
                    callback(None, error)
                else:
                    idx = message['log_idx']
                    term = message['log_term']
                    if idx <= self.__raftLastApplied:
                        # Stale apply_command_response:
                        # The log position was already applied (e.g. via snapshot installed after leader reconnect)
                        # before this response was processed. Or the leader was restarted without notice (and remains leader).
                        # The command outcome cannot be tracked; signal the caller so it can retry rather than hanging
                        # forever.
                        callback(None, FAIL_REASON.UNKNOWN_OUTCOME)
                    else:
                        self.__commandsWaitingCommit[idx].append((term, callback))

        if message['type'] == 'response_vote' and message.get('pre_vote'):
            # coffer: count pre-votes for the term we asked about; a majority starts the election.
            if self.__raftState == _RAFT_STATE.FOLLOWER and self.__preVoteTerm is not None \
                    and message['term'] == self.__preVoteTerm == self.__raftCurrentTerm + 1:
                self.__preVotesCount += 1
                if self.__preVotesCount > (len(self.__otherNodes) + 1) / 2:
                    self.__startElection(False)
            return

        if self.__raftState == _RAFT_STATE.CANDIDATE:
            if message['type'] == 'response_vote' and message['term'] == self.__raftCurrentTerm:
                self.__votesCount += 1

                if self.__votesCount > (len(self.__otherNodes) + 1) / 2:
                    self.__onBecomeLeader()

        if self.__raftState == _RAFT_STATE.LEADER:
            if message['type'] == 'next_node_idx' and message.get('term', 0) > self.__raftCurrentTerm:
                # coffer: a follower is in a later term: step down and adopt it.
                self.__setCurrentTerm(message['term'], None)
                self.__setState(_RAFT_STATE.FOLLOWER)
                self.__raftLeader = None
                self.__onLeaderChanged()
                return
            if message['type'] == 'next_node_idx' and 'snapshot' in message:
                self.__serializer.onTransmissionAck(node, message['snapshot'])
            if message['type'] == 'next_node_idx' and 'lease' in message:
                if self.__leaseStamps.get(node, 0) < message['lease'] <= monotonicTime() * 1e6:
                    self.__leaseStamps[node] = message['lease']
            if message['type'] == 'next_node_idx':
                reset = message['reset']
                nextNodeIdx = message['next_node_idx']
                success = message['success']

                currentNodeIdx = nextNodeIdx - 1
                if reset:
                    # coffer: replies to appends sent before an earlier reset arrive
                    # after it, each pointing elsewhere (a follower with a stale tail
                    # answers "no entry at prev" with its own log end, then "conflict"
                    # with the start of that tail's term): taken in arrival order they
                    # sent the leader back and forth, re-sending its whole tail each
                    # time, for seconds. A reset at or below what the follower already
                    # confirmed is stale; while probing, only a reset that moves back
                    # is news (the answer to a probe; the heartbeats' say nothing new).
                    matchIdx = self.__raftMatchIndex[node]
                    probing = node in self.__probing and \
                        self.__raftNextIndex[node] > self.__raftLog[0][1]
                    if nextNodeIdx <= matchIdx:
                        pass
                    elif probing:
                        if nextNodeIdx < self.__raftNextIndex[node]:
                            self.__raftNextIndex[node] = max(matchIdx + 1, nextNodeIdx)
                            self.__probing[node] = 0.0  # probe from there at once
                    else:
                        self.__raftNextIndex[node] = nextNodeIdx
                        self.__probing[node] = 0.0
                if success:
                    if self.__raftMatchIndex[node] < currentNodeIdx:
                        self.__raftMatchIndex[node] = currentNodeIdx
                        self.__raftNextIndex[node] = nextNodeIdx
                        self.__probing.pop(node, None)  # coffer: matched: pipeline again
                self.__lastResponseTime[node] = monotonicTime()

    def __callErrCallback(self, err, callback):
        if callback is None:
            return
        if isinstance(callback, tuple):
            requestNode, requestID = callback
            self.__transport.send(requestNode, {
                'type': 'apply_command_response',
                'request_id': requestID,
                'error': err,
            })
            return
        callback(None, err)

    def __sendNextNodeIdx(self, node, reset=False, nextNodeIdx = None, success = False, snapshotAck = None):
        if nextNodeIdx is None:
            nextNodeIdx = self.__getCurrentLogIndex() + 1
        message = {
            'type': 'next_node_idx',
            'next_node_idx': nextNodeIdx,
            'reset': reset,
            'success': success,
        }
        if snapshotAck is not None:
            message['snapshot'] = snapshotAck  # coffer: how much of the snapshot we hold
        if self.__leaderLeaseStamp is not None and self.__leaderLeaseStamp[0] == node:
            message['lease'] = self.__leaderLeaseStamp[1]  # coffer: echo for the leader lease
        self.__transport.send(node, message)

    def __generateRaftTimeout(self):
        minTimeout = self.__conf.raftMinTimeout
        maxTimeout = self.__conf.raftMaxTimeout
        return minTimeout + (maxTimeout - minTimeout) * random.random()

    def __onReadonlyNodeConnected(self, node):
        self.__readonlyNodes.add(node)
        self.__connectedNodes.add(node)
        self.__raftNextIndex[node] = self.__getCurrentLogIndex() + 1
        self.__raftMatchIndex[node] = 0

    def __onReadonlyNodeDisconnected(self, node):
        self.__readonlyNodes.discard(node)
        self.__connectedNodes.discard(node)
        self.__raftNextIndex.pop(node, None)
        self.__raftMatchIndex.pop(node, None)
        node._destroy()

    def __onNodeConnected(self, node):
        self.__connectedNodes.add(node)
        # coffer: a peer that (re)connects may have restarted; what it confirmed
        # before is no proof of its log now (stale resets are judged by it).
        if node in self.__raftMatchIndex:
            self.__raftMatchIndex[node] = 0

    def __onNodeDisconnected(self, node):
        self.__connectedNodes.discard(node)

    def __getCurrentLogIndex(self):
        return self.__raftLog[-1][1]

    def __getCurrentLogTerm(self):
        return self.__raftLog[-1][2]

    def __getPrevLogIndexTerm(self, nextNodeIndex):
        prevIndex = nextNodeIndex - 1
        entries = self.__getEntries(prevIndex, 1)
        if entries:
            return prevIndex, entries[0][2]
        return None, None

    def __getEntries(self, fromIDx, count=None, maxSizeBytes = None):
        firstEntryIDx = self.__raftLog[0][1]
        if fromIDx is None or fromIDx < firstEntryIDx:
            return []
        diff = fromIDx - firstEntryIDx
        if count is None:
            result = self.__raftLog[diff:]
        else:
            result = self.__raftLog[diff:diff + count]
        if maxSizeBytes is None:
            return result
        totalSize = 0
        i = 0
        # coffer: stop before the entry that would pass the batch size (one
        # entry always goes), counting each entry's framing too, so a message
        # stays within the wire's frame cap (consensus.wire.ENTRY_OVERHEAD).
        for i, entry in enumerate(result):
            totalSize += len(entry[0]) + 64
            if totalSize > maxSizeBytes:
                return result[:max(i, 1)]
        return result

    def _isLeader(self):
        """ Check if current node has a leader state.
        WARNING: there could be multiple leaders at the same time!

        :return: True if leader, False otherwise
        :rtype: bool
        """
        return self.__raftState == _RAFT_STATE.LEADER

    def _getLeader(self):
        """ Returns last known leader.

        WARNING: this information could be outdated, eg. there could be another leader selected!
        WARNING: there could be multiple leaders at the same time!

        :return: the last known leader node.
        :rtype: Node
        """
        return self.__raftLeader

    def isReady(self):
        """Check if current node is initially synced with others and has an actual data.

        :return: True if ready, False otherwise
        :rtype: bool
        """
        return self.__onReadyCalled

    def _isReady(self):
        return self.isReady()

    def _getTerm(self):
        return self.__raftCurrentTerm

    def _getRaftLogSize(self):
        return len(self.__raftLog)

    def __deleteEntriesFrom(self, fromIDx):
        firstEntryIDx = self.__raftLog[0][1]
        diff = fromIDx - firstEntryIDx
        if diff < 0:
            return
        self.__raftLog.deleteEntriesFrom(diff)

    def __deleteEntriesTo(self, toIDx):
        firstEntryIDx = self.__raftLog[0][1]
        diff = toIDx - firstEntryIDx
        if diff < 0:
            return
        self.__raftLog.deleteEntriesTo(diff)

    def __onBecomeLeader(self):
        self.__raftLeader = self.__selfNode
        self.__setState(_RAFT_STATE.LEADER)

        self.__lastResponseTime.clear()
        self.__leaseStamps = {}  # coffer: a new term's lease starts from nothing
        self.__leaseVoided = False
        self.__probing = {}
        for node in self.__otherNodes | self.__readonlyNodes:
            self.__raftNextIndex[node] = self.__getCurrentLogIndex() + 1
            self.__raftMatchIndex[node] = 0
            self.__lastResponseTime[node] = monotonicTime()

        # No-op command after leader election.
        idx, term = self.__getCurrentLogIndex() + 1, self.__raftCurrentTerm
        self.__raftLog.add(_bchr(_COMMAND_TYPE.NO_OP), idx, term)
        self.__noopIDx = idx
        if not self.__conf.appendEntriesUseBatch:
            self.__sendAppendEntries()

        self.__sendAppendEntries()

    def __setCurrentTerm(self, term, votedForNodeId):
        self.__raftCurrentTerm = term
        self.__votedForNodeId = votedForNodeId
        self.__raftLog.setCurrentTerm(term, votedForNodeId)

    def __setState(self, newState):
        oldState = self.__raftState
        self.__raftState = newState
        callback = self.__conf.onStateChanged
        if callback is not None and oldState != newState:
            callback(oldState, newState)

    def __onLeaderChanged(self):
        for id in sorted(self.__commandsWaitingReply):
            self.__commandsWaitingReply[id](None, FAIL_REASON.LEADER_CHANGED)
        self.__commandsWaitingReply = {}

    def __sendAppendEntries(self):
        self.__newAppendEntriesTime = monotonicTime() + self.__conf.appendEntriesPeriod
        # coffer: each append carries when we sent it (our monotonic clock, µs,
        # taken before sending); followers echo it, which renews the lease.
        leaseStamp = int(monotonicTime() * 1e6)

        startTime = monotonicTime()

        batchSizeBytes = self.__conf.appendEntriesBatchSizeBytes

        for node in self.__otherNodes | self.__readonlyNodes:
            if node not in self.__connectedNodes:
                self.__serializer.cancelTransmisstion(node)
                continue

            sendSingle = True
            sendingSerialized = False
            nextNodeIndex = self.__raftNextIndex[node]

            while nextNodeIndex <= self.__getCurrentLogIndex() or sendSingle or sendingSerialized:
                if nextNodeIndex > self.__raftLog[0][1]:
                    prevLogIdx, prevLogTerm = self.__getPrevLogIndexTerm(nextNodeIndex)
                    entries = []
                    # coffer: while probing (see next_node_idx), one message per call,
                    # and entries only once per answer to them (or after a silence of
                    # two election timeouts): re-sending the tail every period to a
                    # slow follower only made it slower. The next index stays until
                    # the follower says where its log matches.
                    probe = self.__probing.get(node)
                    if nextNodeIndex <= self.__getCurrentLogIndex() and (
                            probe is None or startTime - probe >= 2 * self.__conf.raftMaxTimeout):
                        entries = self.__getEntries(nextNodeIndex, None, batchSizeBytes)
                        if probe is None:
                            self.__raftNextIndex[node] = entries[-1][1] + 1
                        else:
                            self.__probing[node] = startTime

                    # coffer: an entry at or above the batch size travels alone in
                    # an ordinary message (the pickled chunked transmission is gone).
                    if True:
                        message = {
                            'type': 'append_entries',
                            'term': self.__raftCurrentTerm,
                            'commit_index': self.__raftCommitIndex,
                            'entries': entries,
                            'prevLogIdx': prevLogIdx,
                            'prevLogTerm': prevLogTerm,
                            'lease': leaseStamp,
                        }
                        self.__transport.send(node, message)
                        if node not in self.__connectedNodes or probe is not None:
                            break
                else:
                    # coffer: a chunk while the follower's acknowledgements allow one,
                    # else a heartbeat; the follower's success after installing moves
                    # its next index (consensus.snapshot_stream).
                    transmissionData = self.__serializer.getTransmissionData(node)
                    if transmissionData is None and not sendSingle:
                        break
                    message = {
                        'type': 'append_entries',
                        'term': self.__raftCurrentTerm,
                        'commit_index': self.__raftCommitIndex,
                        'serialized': transmissionData,
                        'lease': leaseStamp,
                    }
                    self.__transport.send(node, message)
                    if node not in self.__connectedNodes:
                        break
                    sendingSerialized = transmissionData is not None
                    if not sendingSerialized:
                        break

                nextNodeIndex = self.__raftNextIndex[node]

                sendSingle = False

                delta = monotonicTime() - startTime
                if delta > self.__conf.appendEntriesPeriod:
                    break

    def __connectedToAnyone(self):
        return len(self.__connectedNodes) > 0 or len(self.__otherNodes) == 0

    def _getConf(self):
        return self.__conf

    @property
    def conf(self):
        return self.__conf

    def _getEncryptor(self):
        return self.__encryptor

    @property
    def encryptor(self):
        return self.__encryptor

    def __changeCluster(self, request):
        if self.__raftLastApplied < self.__noopIDx:
            # No-op entry was not commited yet
            return False

        if self.__changeClusterIDx is not None:
            if self.__raftLastApplied >= self.__changeClusterIDx:
                self.__changeClusterIDx = None

        # Previous cluster change request was not commited yet
        if self.__changeClusterIDx is not None:
            return False

        return self.__doChangeCluster(request)

    def __setCodeVersion(self, newVersion):
        self.__enabledCodeVersion = newVersion

    def __doChangeCluster(self, request, reverse = False):
        requestType = request[0]
        requestNodeId = request[1]
        if len(request) >= 3:
            requestNode = request[2]
            if not isinstance(requestNode, Node): # Actually shouldn't be necessary, but better safe than sorry.
                requestNode = self.__nodeClass(requestNode)
        else:
            requestNode = self.__nodeClass(requestNodeId)

        if requestType == 'add':
            adding = not reverse
        elif requestType == 'rem':
            adding = reverse
        else:
            return False

        if adding:
            newNode = requestNode
            # Node already exists in cluster
            if newNode == self.__selfNode or newNode in self.__otherNodes:
                return False
            self.__otherNodes.add(newNode)
            self.__raftNextIndex[newNode] = self.__getCurrentLogIndex() + 1
            self.__raftMatchIndex[newNode] = 0
            if self._isLeader():
                self.__lastResponseTime[newNode] = monotonicTime()
            self.__transport.addNode(newNode)
            return True
        else:
            oldNode = requestNode
            if oldNode == self.__selfNode:
                return False
            if oldNode not in self.__otherNodes:
                return False
            self.__otherNodes.discard(oldNode)
            self.__raftNextIndex.pop(oldNode, None)
            self.__raftMatchIndex.pop(oldNode, None)
            self.__transport.dropNode(oldNode)
            return True

    def __parseChangeClusterRequest(self, command):
        commandType = ord(command[:1])
        if commandType != _COMMAND_TYPE.MEMBERSHIP:
            return None
        return _decodeMembership(command[1:])

    def __tryLogCompaction(self):
        currTime = monotonicTime()
        serializeState, serializeID = self.__serializer.checkSerializing()

        if serializeState == SERIALIZER_STATE.SUCCESS:
            self.__lastSerializedTime = currTime
            self.__deleteEntriesTo(serializeID)
            self.__lastSerializedEntry = serializeID

        if serializeState == SERIALIZER_STATE.FAILED:
            logger.warning('Failed to store full dump')

        if serializeState != SERIALIZER_STATE.NOT_SERIALIZING:
            return

        if len(self.__raftLog) <= self.__conf.logCompactionMinEntries and \
                                currTime - self.__lastSerializedTime <= self.__conf.logCompactionMinTime and \
                not self.__forceLogCompaction:
            return

        if self.__conf.logCompactionSplit:
            allNodeIds = sorted([node.id for node in (self.__otherNodes | {self.__selfNode})])
            nodesCount = len(allNodeIds)
            selfIdx = allNodeIds.index(self.__selfNode.id)
            interval = self.__conf.logCompactionMinTime
            periodStart = int(currTime / interval ) * interval
            nodeInterval = float(interval) / nodesCount
            nodeIntervalStart = periodStart + selfIdx * nodeInterval
            nodeIntervalEnd = nodeIntervalStart + 0.3 * nodeInterval
            if currTime < nodeIntervalStart or currTime >= nodeIntervalEnd:
                return

        self.__forceLogCompaction = False

        lastAppliedEntries = self.__getEntries(self.__raftLastApplied - 1, 2)
        if len(lastAppliedEntries) < 2 or lastAppliedEntries[0][1] == self.__lastSerializedEntry:
            self.__lastSerializedTime = currTime
            return

        if self.__conf.serializer is None:
            selfData = dict([(k, v) for k, v in iteritems(self.__dict__) if k not in self.__properies])
            data = selfData
            if self.__consumers:
                data = [selfData]
                for consumer in self.__consumers:
                    data.append(consumer._serialize())
        else:
            data = None
        cluster = self.__otherNodes | {self.__selfNode}
        self.__serializer.serialize((data, lastAppliedEntries[1], lastAppliedEntries[0], cluster), lastAppliedEntries[0][1])

    def __loadDumpFile(self, clearJournal):
        try:
            data = self.__serializer.deserialize()
            if data[0] is not None:
                if self.__consumers:
                    selfData = data[0][0]
                    consumersData = data[0][1:]
                else:
                    selfData = data[0]
                    consumersData = []

                for k, v in iteritems(selfData):
                    self.__dict__[k] = v

                for i, consumer in enumerate(self.__consumers):
                    consumer._deserialize(consumersData[i])

            if clearJournal or \
                    len(self.__raftLog) < 2 or \
                    self.__raftLog[0] != data[2] or \
                    self.__raftLog[1] != data[1]:
                self.__raftLog.clear()
                self.__raftLog.add(*data[2])
                self.__raftLog.add(*data[1])

            self.__raftLastApplied = data[1][1]

            if self.__raftCommitIndex > self.__getCurrentLogIndex():
                logger.warning('raftCommitIndex (%d) exceeds journal end (%d) after loading dump, '
                               'likely due to unsynced journal entries lost on crash; '
                               'clamping to journal end',
                               self.__raftCommitIndex, self.__getCurrentLogIndex())
                self.__raftCommitIndex = self.__getCurrentLogIndex()
                self.__raftLog.setRaftCommitIndex(self.__raftCommitIndex)

            if self.__conf.dynamicMembershipChange:
                self.__updateClusterConfiguration([node for node in data[3] if node != self.__selfNode])
            self.__onSetCodeVersion(0)
        except:
            logger.exception('failed to load full dump')

    def __updateClusterConfiguration(self, newNodes):
        # newNodes: list of Node or node ID
        newNodes = {self.__nodeClass(node) if not isinstance(node, Node) else node for node in newNodes}
        nodesToRemove = self.__otherNodes - newNodes
        nodesToAdd = newNodes - self.__otherNodes
        for node in nodesToRemove:
            self.__raftNextIndex.pop(node, None)
            self.__raftMatchIndex.pop(node, None)
            self.__transport.dropNode(node)
        self.__otherNodes = newNodes
        for node in nodesToAdd:
            self.__transport.addNode(node)
            self.__raftNextIndex[node] = self.__getCurrentLogIndex() + 1
            self.__raftMatchIndex[node] = 0

# coffer: the @replicated/@replicated_sync decorators (pickled method calls) were
# removed; applications call submitCommand(payload) and override
# applyCommandPayload(payload).


def _encodeVersion(version):
    """coffer: a code version entry is its decimal digits (was a pickle)."""
    return str(int(version)).encode('ascii')


def _decodeVersion(data):
    text = data.decode('ascii')
    if not text.isdigit() or len(text) > 9:
        raise SyncObjException('malformed version entry')
    return int(text)


def _encodeMembership(kind, nodeId):
    """coffer: a membership entry is JSON ["add"|"rem", "host:port"] (was a pickle)."""
    return json.dumps([kind, nodeId], separators=(',', ':')).encode('utf-8')


def _decodeMembership(data):
    try:
        request = json.loads(data.decode('utf-8'))
    except ValueError:
        raise SyncObjException('malformed membership entry')
    if not (isinstance(request, list) and len(request) == 2 and request[0] in ('add', 'rem')
            and isinstance(request[1], str) and request[1]):
        raise SyncObjException('malformed membership entry')
    return request
