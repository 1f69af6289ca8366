package wire

// The course skeleton's request types. Its client calls KVService.Get and
// KVService.Put over net/rpc's HTTP transport with gob, which matches struct
// fields by name, so these must keep their field names and types.

// GetRequest is the argument of the legacy KVService.Get.
type GetRequest struct {
	Key string
}

// GetResponse is the reply of the legacy KVService.Get. A missing key reads
// as the empty string.
type GetResponse struct {
	Value string
}

// PutRequest is the argument of the legacy KVService.Put.
type PutRequest struct {
	Key   string
	Value string
}

// PutResponse is the (empty) reply of the legacy KVService.Put.
type PutResponse struct{}
