"""The AWS backend of the log: transactions, pending appends, state pointers and the registry in
DynamoDB, beside data and state snapshots on S3."""
