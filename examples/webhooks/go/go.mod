module example.com/callgate-webhook-receiver

go 1.18
