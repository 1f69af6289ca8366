package failover

// Vote is the last vote a replica cast: the term it voted in and the
// address of the candidate it voted for (its own when it stood itself).
type Vote struct {
	Term uint64
	For  string
}

// PreVote is a pre-vote request: the candidate's address, the term it
// would stand in, and how up to date its log is.
type PreVote struct {
	From string
	Term uint64
	Log  LogPosition
}

// RefusePreVote says whether a replica that cast vote, and whose log ends
// at own, refuses the pre-vote p. It refuses when it has already voted in
// p's term, or a later one, for another candidate (itself included), and
// its log is at least as up to date as p's.
//
// Raft (hashicorp/raft v1.7.3) grants such a pre-vote, and that splits a
// vote: a replica that stood in term T after a leadership transfer (which
// skips the pre-vote) grants a peer whose timer fires a moment later a
// pre-vote for T as well, the peer stands in T too and votes for itself,
// and neither gets a majority until a timer ends the round. Refused, the
// peer does not stand in that term, and grants the candidate its vote
// when the request arrives. etcd's raft refuses such a pre-vote whatever
// the logs.
//
// The log condition keeps elections live: a replica refuses only a peer
// it could beat in an election itself. A replica whose log is behind
// grants the pre-vote, as Raft does, since the peer is the one that can
// win. (The replica must also be a voter, which the caller checks.)
func RefusePreVote(vote Vote, own LogPosition, p PreVote) bool {
	return vote.Term >= p.Term && vote.For != p.From && !own.Behind(p.Log)
}
