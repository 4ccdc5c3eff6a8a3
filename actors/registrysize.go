package actors

import cmap "github.com/orcaman/concurrent-map"

// registryShards is how many shards each of the 1,024 buckets of an actor
// system's process registry has. protoactor-go makes every bucket a
// concurrent-map, whose default of 32 shards costs about 1 MiB of heap per
// actor system before the first actor: a third of an idle node's live heap.
// The 1,024 buckets already spread the registry's locks, one lock each for
// a few hundred to a few thousand actors: one shard per bucket costs 88 KB
// (four cost 352 KB, the largest live value of an idle orchestrator).
//
// concurrent-map reads the count when a map is made and when a key is
// hashed, so it must not change once a map exists: it is set here, in the
// package's initialisation, before any actor system can be made.
const registryShards = 1

func init() { cmap.SHARD_COUNT = registryShards }
