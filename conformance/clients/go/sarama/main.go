package main

import _ "github.com/IBM/sarama"

func main() {}
