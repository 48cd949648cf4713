import os
import mmap
import struct
import shutil

from .version import VERSION

class Journal(object):

    def add(self, command, idx, term):
        raise NotImplementedError

    def clear(self):
        raise NotImplementedError

    def deleteEntriesFrom(self, entryFrom):
        raise NotImplementedError

    def deleteEntriesTo(self, entryTo):
        raise NotImplementedError

    def __getitem__(self, item):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def _destroy(self):
        raise NotImplementedError

    def setRaftCommitIndex(self, raftCommitIndex):
        raise NotImplementedError

    def getRaftCommitIndex(self):
        raise NotImplementedError

    def setCurrentTerm(self, term, votedForNodeId):
        raise NotImplementedError

    def getCurrentTerm(self):
        raise NotImplementedError

    def getVotedForNodeId(self):
        raise NotImplementedError

    def onOneSecondTimer(self):
        pass

    def durableIndex(self):
        """coffer: the last entry a leader may count as acknowledged by itself
        (on its disk); a journal without fsync counts everything it holds."""
        return self[len(self) - 1][1] if len(self) else 0


class MemoryJournal(Journal):

    def __init__(self):
        self.__journal = []
        self.__bytesSize = 0
        self.__lastCommitIndex = 0
        self.__currentTerm = 0
        self.__votedForNodeId = None

    def add(self, command, idx, term):
        self.__journal.append((command, idx, term))

    def clear(self):
        self.__journal = []

    def deleteEntriesFrom(self, entryFrom):
        del self.__journal[entryFrom:]

    def deleteEntriesTo(self, entryTo):
        self.__journal = self.__journal[entryTo:]

    def __getitem__(self, item):
        return self.__journal[item]

    def __len__(self):
        return len(self.__journal)

    def _destroy(self):
        pass

    def setRaftCommitIndex(self, raftCommitIndex):
        pass

    def getRaftCommitIndex(self):
        return 1

    def setCurrentTerm(self, term, votedForNodeId):
        self.__currentTerm = term
        self.__votedForNodeId = votedForNodeId

    def getCurrentTerm(self):
        return self.__currentTerm

    def getVotedForNodeId(self):
        return self.__votedForNodeId



# coffer: the mmap FileJournal (pickled meta, no fsync) was removed;
# consensus.journal.DurableJournal is injected instead.
def createJournal(journalFile = None):
    # coffer: a Journal instance is used as is (consensus.journal.DurableJournal).
    if isinstance(journalFile, Journal):
        return journalFile
    if journalFile is None:
        return MemoryJournal()
    raise ValueError('coffer: pass a Journal instance (the file journal was removed)')
