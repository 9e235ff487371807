internal import CKafka

// librdkafka calls these on its own threads (log) or on whichever thread polls (delivery reports,
// rebalances). They are plain functions so no actor isolation is attached to them; state comes in
// through an Unmanaged opaque.

func rdkafkaLogCallback(
    _ handle: OpaquePointer?, _ level: Int32, _ facility: UnsafePointer<CChar>?, _ text: UnsafePointer<CChar>?
) {
    guard let handle, let opaque = rd_kafka_opaque(handle) else { return }
    let context = Unmanaged<RDKafkaClientContext>.fromOpaque(opaque).takeUnretainedValue()
    context.configuration.logHandler?(
        KafkaLogEvent(
            level: level,
            facility: facility.map { String(cString: $0) } ?? "",
            message: text.map { String(cString: $0) } ?? "",
            clientName: String(cString: rd_kafka_name(handle))))
}

func rdkafkaDeliveryReportCallback(
    _ handle: OpaquePointer?, _ message: UnsafePointer<rd_kafka_message_t>?, _ opaque: UnsafeMutableRawPointer?
) {
    guard let message, let completion = message.pointee._private else { return }
    // The send that produced this message passed one retained reference; the report consumes it.
    let delivery = Unmanaged<DeliveryCompletion>.fromOpaque(completion).takeRetainedValue()
    let raw = message.pointee
    if raw.err == RD_KAFKA_RESP_ERR_NO_ERROR {
        delivery.complete(.success((partition: raw.partition, offset: raw.offset)))
    } else {
        delivery.complete(.failure(KafkaError(raw.err)))
    }
}

func rdkafkaRebalanceCallback(
    _ handle: OpaquePointer?, _ event: rd_kafka_resp_err_t,
    _ partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?, _ opaque: UnsafeMutableRawPointer?
) {
    guard let handle, let opaque else { return }
    let context = Unmanaged<RDKafkaClientContext>.fromOpaque(opaque).takeUnretainedValue()
    let cooperative = rd_kafka_rebalance_protocol(handle).map { String(cString: $0) } == "COOPERATIVE"
    var failure: KafkaError?
    switch event {
    case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
        if cooperative {
            if let error = rd_kafka_incremental_assign(handle, partitions) { failure = KafkaError(consuming: error) }
        } else {
            let err = rd_kafka_assign(handle, partitions)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { failure = KafkaError(err) }
        }
    case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
        // With enable.auto.commit librdkafka commits the stored offsets of revoked partitions here.
        if cooperative {
            if let error = rd_kafka_incremental_unassign(handle, partitions) { failure = KafkaError(consuming: error) }
        } else {
            let err = rd_kafka_assign(handle, nil)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { failure = KafkaError(err) }
        }
    default:
        failure = KafkaError(event, detail: "rebalance failed")
        _ = rd_kafka_assign(handle, nil)
    }
    if let failure {
        context.configuration.report(
            level: 3, facility: "REBALANCE", message: failure.description,
            clientName: String(cString: rd_kafka_name(handle)))
    }
    context.refreshAssignment(handle)
}
