module meshc

go 1.26.8

require (
	github.com/nats-io/nats.go v1.55.0
	go.yaml.in/yaml/v3 v3.0.6
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
