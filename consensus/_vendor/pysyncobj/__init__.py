from .syncobj import SyncObj, SyncObjException, SyncObjConf,\
    FAIL_REASON, _COMMAND_TYPE, createJournal, HAS_CRYPTO, SERIALIZER_STATE, SyncObjConsumer, _RAFT_STATE
