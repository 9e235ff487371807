/// Versioned SQL migrations, applied in order by `facegate migrate` under an advisory lock.
/// Forward-only: a shipped migration is never edited (its checksum is recorded); changes go in a new one.
public enum Schema {
    public struct Step: Sendable {
        public var version: Int
        public var name: String
        public var sql: String
    }

    /// The group role whose grants the services use: it owns nothing, and may only INSERT and SELECT transactions.
    public static let serviceRole = "facegate_service"

    /// The login role of each service (members of `serviceRole`, no other attribute): services never log in
    /// as the schema owner or a superuser. Passwords, where the server asks for them, are set by the
    /// operator (`ALTER ROLE … PASSWORD`), never by a migration.
    public static let serviceLogins: [String: String] = [
        "auth-gateway": "facegate_gateway",
        "matcher-worker": "facegate_matcher",
        "ctid-verifier": "facegate_ctid",
        "kiosk-orchestrator": "facegate_kiosk",
    ]

    public static let steps: [Step] = [
        Step(version: 1, name: "core tables", sql: core),
        Step(version: 2, name: "transactions hash chain", sql: transactions),
        Step(version: 3, name: "service role and row-level security", sql: roles),
        Step(version: 4, name: "device credential attestation and lookups", sql: deviceCredentials),
        Step(version: 5, name: "kiosk approval policy, session lookups, used liveness frames", sql: kioskApproval),
        Step(version: 6, name: "service login roles", sql: serviceLoginRoles),
        Step(version: 7, name: "face model per app", sql: faceModelPerApp),
        Step(version: 8, name: "device binding by DPoP key", sql: deviceBinding),
        Step(version: 9, name: "key expiry and idempotent creates", sql: keyExpiryAndIdempotency),
        Step(version: 10, name: "keyed audit chain", sql: keyedAuditChain),
        Step(version: 11, name: "per-service grants", sql: perServiceGrants),
        Step(version: 12, name: "secret rotation time", sql: secretRotationTime),
        Step(version: 13, name: "forced row-level security", sql: forcedRowLevelSecurity),
        Step(version: 14, name: "kept enrollment photos", sql: keptEnrollmentPhotos),
        Step(version: 15, name: "registered kiosks, per-app liveness frames", sql: registeredKiosks),
        Step(version: 16, name: "app deletion", sql: appDeletion),
        Step(version: 17, name: "gallery tombstones follow their app", sql: tombstonesFollowTheirApp),
        Step(version: 18, name: "recent gallery changes by index", sql: recentGalleryChanges),
        Step(version: 19, name: "template shard hash", sql: templateShardHash),
    ]

    /// The tables that hold an app's data, each with an `app_id` column.
    public static let tenantTables = tenantTablesAtStep13 + ["enrollment_photos", "kiosks"]

    /// The tenant tables when step 13 forced row-level security on them (a shipped step's SQL never changes).
    static let tenantTablesAtStep13 = [
        "users", "face_templates", "gallery_tombstones", "devices", "attempt_counters", "login_confirmations",
        "used_token_ids", "usage_counters", "ctid_serials", "ctid_registry", "kiosk_sessions", "device_credentials",
        "one_time_challenges", "used_liveness_frames", "transactions", "transaction_chain_heads",
    ]

    static let core = """
    CREATE TABLE apps (
        id uuid PRIMARY KEY,
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        secret_hash bytea NOT NULL,
        previous_secret_hash bytea,
        previous_secret_valid_until timestamptz,
        ctid_key_sealed bytea,
        modules jsonb NOT NULL,
        match_threshold real NOT NULL DEFAULT 0.5 CHECK (match_threshold > 0 AND match_threshold < 2),
        liveness jsonb NOT NULL,
        quotas jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE api_keys (
        id uuid PRIMARY KEY,
        role text NOT NULL CHECK (role IN ('admin', 'auditor')),
        name text NOT NULL,
        key_hash bytea NOT NULL UNIQUE,
        app_ids uuid[],
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
    );

    CREATE TABLE users (
        id uuid PRIMARY KEY,
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        employee_number text NOT NULL CHECK (length(employee_number) BETWEEN 1 AND 64),
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        source text NOT NULL DEFAULT 'operator',
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (app_id, employee_number)
    );
    CREATE INDEX users_app_created ON users (app_id, created_at, id);

    -- Every enrollment and erasure takes the next change sequence number; a matcher that missed a
    -- broadcast catches up by asking for everything above the highest number it has seen.
    CREATE SEQUENCE gallery_change_seq;

    CREATE TABLE face_templates (
        id uuid PRIMARY KEY,
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        embedding_sealed bytea NOT NULL,
        model_id text NOT NULL,
        quality jsonb NOT NULL,
        change_seq bigint NOT NULL DEFAULT nextval('gallery_change_seq'),
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX face_templates_app ON face_templates (app_id);
    CREATE INDEX face_templates_user ON face_templates (user_id);
    CREATE INDEX face_templates_seq ON face_templates (change_seq);

    CREATE TABLE gallery_tombstones (
        template_id uuid PRIMARY KEY,
        app_id uuid NOT NULL,
        user_id uuid NOT NULL,
        change_seq bigint NOT NULL DEFAULT nextval('gallery_change_seq'),
        deleted_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX gallery_tombstones_seq ON gallery_tombstones (change_seq);

    CREATE TABLE devices (
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        device_id text NOT NULL,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        confirmed_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (app_id, device_id, user_id)
    );

    -- Brute-force counters per (app, subject): subject is a device id or a device credential.
    CREATE TABLE attempt_counters (
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        subject text NOT NULL,
        consecutive_failures int NOT NULL DEFAULT 0,
        total_failures int NOT NULL DEFAULT 0,
        last_failure_at timestamptz,
        locked_at timestamptz,
        PRIMARY KEY (app_id, subject)
    );

    CREATE TABLE login_confirmations (
        id uuid PRIMARY KEY,
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        device_id text NOT NULL,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        transaction_id uuid NOT NULL,
        score real,
        attempts int NOT NULL DEFAULT 0,
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        voided_at timestamptz
    );

    CREATE TABLE used_token_ids (
        jti text PRIMARY KEY,
        app_id uuid NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX used_token_ids_expiry ON used_token_ids (expires_at);

    CREATE TABLE usage_counters (
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        module text NOT NULL,
        day date NOT NULL,
        calls bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (app_id, module, day)
    );

    CREATE TABLE ctid_serials (
        serial text PRIMARY KEY,
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        auth_mode int NOT NULL,
        rand_num text NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz
    );

    CREATE TABLE ctid_registry (
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        number_hash bytea NOT NULL,
        name_sealed bytea NOT NULL,
        valid_start text NOT NULL,
        valid_end text NOT NULL,
        template_sealed bytea,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (app_id, number_hash)
    );

    CREATE TABLE kiosk_sessions (
        id uuid PRIMARY KEY,
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        token_hash bytea NOT NULL,
        device_id text,
        state text NOT NULL,
        data jsonb NOT NULL DEFAULT '{}',
        customer_id uuid,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE kiosk_events (
        session_id uuid NOT NULL REFERENCES kiosk_sessions(id) ON DELETE CASCADE,
        seq int NOT NULL,
        name text NOT NULL,
        data jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (session_id, seq)
    );

    CREATE TABLE device_credentials (
        id uuid PRIMARY KEY,
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        device_id text NOT NULL,
        public_key bytea NOT NULL,
        policy text NOT NULL,
        counter bigint NOT NULL DEFAULT 0,
        flagged_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
    );

    CREATE TABLE one_time_challenges (
        id text PRIMARY KEY,
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        purpose text NOT NULL,
        subject text,
        data jsonb NOT NULL DEFAULT '{}',
        expires_at timestamptz NOT NULL,
        used_at timestamptz
    );

    -- Consumer-side deduplication: a message id is processed once per consumer, whatever Kafka redelivers.
    CREATE TABLE processed_messages (
        consumer text NOT NULL,
        message_id text NOT NULL,
        result bytea,
        processed_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (consumer, message_id)
    );

    CREATE TABLE reply_partition_leases (
        topic text NOT NULL,
        partition int NOT NULL,
        owner text NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (topic, partition)
    );
    """

    static let transactions = """
    -- Append-only, hash-chained per app: row_hash = SHA-256(prev_hash || canonical row). The chain head
    -- row serialises appends of one app; verification recomputes every hash in order.
    CREATE TABLE transactions (
        id uuid PRIMARY KEY,
        app_id uuid NOT NULL,
        chain_seq bigint NOT NULL,
        kind text NOT NULL,
        outcome text NOT NULL,
        user_id uuid,
        device_id text,
        client_ip text,
        score real,
        latency_ms int NOT NULL,
        detail jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL,
        prev_hash bytea NOT NULL,
        row_hash bytea NOT NULL,
        UNIQUE (app_id, chain_seq)
    );
    CREATE INDEX transactions_app_time ON transactions (app_id, created_at DESC, id);
    CREATE INDEX transactions_user ON transactions (app_id, user_id, created_at DESC);
    CREATE INDEX transactions_device ON transactions (app_id, device_id, created_at DESC);

    CREATE TABLE transaction_chain_heads (
        app_id uuid PRIMARY KEY,
        last_seq bigint NOT NULL,
        last_hash bytea NOT NULL
    );
    """

    static let roles = """
    -- Roles are shared by every database of the cluster: create them once, tolerating a concurrent creator.
    DO $$ BEGIN
        CREATE ROLE facegate_service NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END $$;
    DO $$ BEGIN
        CREATE ROLE facegate_auditor NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END $$;
    GRANT USAGE ON SCHEMA public TO facegate_service, facegate_auditor;
    GRANT SELECT, INSERT, UPDATE, DELETE ON apps, api_keys, users, face_templates, gallery_tombstones, devices,
        attempt_counters, login_confirmations, used_token_ids, usage_counters, ctid_serials, ctid_registry,
        kiosk_sessions, kiosk_events, device_credentials, one_time_challenges, processed_messages,
        reply_partition_leases, transaction_chain_heads TO facegate_service;
    GRANT USAGE, SELECT ON SEQUENCE gallery_change_seq TO facegate_service;
    -- The audit trail: insert and read, never change.
    GRANT SELECT, INSERT ON transactions TO facegate_service;
    GRANT SELECT ON transactions, transaction_chain_heads TO facegate_auditor;

    -- Row-level security as a second wall behind the app-scoped queries: a session that set
    -- facegate.app_id sees only that app's rows; the services' own sessions leave it unset.
    ALTER TABLE users ENABLE ROW LEVEL SECURITY;
    ALTER TABLE face_templates ENABLE ROW LEVEL SECURITY;
    ALTER TABLE devices ENABLE ROW LEVEL SECURITY;
    ALTER TABLE transactions ENABLE ROW LEVEL SECURITY;
    CREATE POLICY tenant_users ON users USING (coalesce(current_setting('facegate.app_id', true), '') = '' OR app_id::text = current_setting('facegate.app_id', true));
    CREATE POLICY tenant_templates ON face_templates USING (coalesce(current_setting('facegate.app_id', true), '') = '' OR app_id::text = current_setting('facegate.app_id', true));
    CREATE POLICY tenant_devices ON devices USING (coalesce(current_setting('facegate.app_id', true), '') = '' OR app_id::text = current_setting('facegate.app_id', true));
    CREATE POLICY tenant_transactions ON transactions USING (coalesce(current_setting('facegate.app_id', true), '') = '' OR app_id::text = current_setting('facegate.app_id', true));
    """

    static let deviceCredentials = """
    -- The attestation a device sent at registration, kept as received (not verified), and the last use.
    ALTER TABLE device_credentials ADD COLUMN attestation bytea, ADD COLUMN last_used_at timestamptz;
    CREATE INDEX device_credentials_user ON device_credentials (app_id, user_id);
    CREATE INDEX one_time_challenges_expiry ON one_time_challenges (expires_at);
    """

    static let kioskApproval = """
    ALTER TABLE apps ADD COLUMN kiosk_approval jsonb NOT NULL DEFAULT '{}';
    -- Kiosk login finds the session that onboarded a customer; the expiry sweep finds overdue sessions.
    CREATE INDEX kiosk_sessions_customer ON kiosk_sessions (customer_id) WHERE customer_id IS NOT NULL;
    CREATE INDEX kiosk_sessions_open_expiry ON kiosk_sessions (expires_at) WHERE state NOT IN ('completed', 'failed', 'cancelled', 'expired');
    -- SHA-256 of every liveness frame submitted with a challenge: a frame sent again is a replay.
    CREATE TABLE used_liveness_frames (
        digest bytea PRIMARY KEY,
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        expires_at timestamptz NOT NULL
    );
    CREATE INDEX used_liveness_frames_expiry ON used_liveness_frames (expires_at);
    GRANT SELECT, INSERT, DELETE ON used_liveness_frames TO facegate_service;
    """

    static let serviceLoginRoles = """
    -- One login role per service, a member of facegate_service and nothing else. Roles are shared by every
    -- database of the cluster: created once, tolerating one that exists (then only its membership is granted).
    DO $$
    DECLARE login text;
    BEGIN
        FOREACH login IN ARRAY ARRAY['facegate_gateway', 'facegate_matcher', 'facegate_ctid', 'facegate_kiosk'] LOOP
            BEGIN
                EXECUTE format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT', login);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
            END;
            EXECUTE format('GRANT facegate_service TO %I', login);
        END LOOP;
    END $$;
    """

    static let faceModelPerApp = """
    -- Apps created before there were two models keep dlib's; the gateway names the model of every new app.
    ALTER TABLE apps ADD COLUMN face_model text NOT NULL DEFAULT 'dlib-resnet-v1'
        CHECK (face_model IN ('dlib-resnet-v1', 'sface-2021dec'));
    -- One name per model, the one apps use.
    UPDATE face_templates SET model_id = 'dlib-resnet-v1' WHERE model_id = 'dlib_face_recognition_resnet_model_v1';
    CREATE INDEX face_templates_user_model ON face_templates (user_id, model_id);
    """

    static let deviceBinding = """
    -- Apps created before device keys keep the X-Device-Id header and the employee-number confirmation;
    -- the gateway names both settings for every new app.
    ALTER TABLE apps ADD COLUMN device_binding text NOT NULL DEFAULT 'header' CHECK (device_binding IN ('dpop', 'header'));
    ALTER TABLE apps ADD COLUMN device_binding_policy text NOT NULL DEFAULT 'employeeNumber'
        CHECK (device_binding_policy IN ('employeeNumber', 'appServerTicket', 'boundDevice'));
    -- A confirmation from an unbound key is asked whatever the face matched: it keeps the users the probe
    -- was within the threshold of ([{"userId", "distance"}], best first), and the person claims one of them.
    ALTER TABLE login_confirmations ALTER COLUMN user_id DROP NOT NULL;
    ALTER TABLE login_confirmations ADD COLUMN candidates jsonb NOT NULL DEFAULT '[]';
    -- A device bound by proving its key, as against one named by the header: only these count for a proof.
    ALTER TABLE devices ADD COLUMN key_bound boolean NOT NULL DEFAULT false;
    """

    static let keyExpiryAndIdempotency = """
    -- Operator and auditor keys may expire; a key past its expiry is refused like a revoked one.
    ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;
    -- The first answer to a creating POST sent with an Idempotency-Key, for 24 h. The scope is a digest of
    -- the caller's credential; the answer (which may carry a new secret) is sealed with a key derived from
    -- that credential and the Idempotency-Key, neither of which the database holds. No status yet: the
    -- first request is still running.
    CREATE TABLE idempotent_requests (
        scope bytea NOT NULL,
        idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
        request_hash bytea NOT NULL,
        status integer,
        response_sealed bytea,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (scope, idempotency_key)
    );
    CREATE INDEX idempotent_requests_created ON idempotent_requests (created_at);
    GRANT SELECT, INSERT, UPDATE, DELETE ON idempotent_requests TO facegate_service;
    """

    static let keyedAuditChain = """
    -- The audit chain becomes keyed (HMAC-SHA256 under a key the database never holds); each row names its
    -- key. Rows from before stay SHA-256 chained and verify as such, but none may follow a keyed row.
    ALTER TABLE transactions ADD COLUMN hash_key_id text;
    """

    static let perServiceGrants = """
    -- Each service's login gets what its own code uses, and nothing more; facegate_service keeps only the schema
    -- and the gallery sequence. (Referential cascades run as the table owner, so deleting a user needs no grant
    -- on the tables that follow it.)
    REVOKE SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA public FROM facegate_service;
    -- auth-gateway: the public API.
    GRANT SELECT, INSERT, UPDATE ON apps, api_keys, device_credentials TO facegate_gateway;
    GRANT SELECT, INSERT, DELETE ON users, used_token_ids, ctid_serials, used_liveness_frames TO facegate_gateway;
    GRANT SELECT, DELETE ON face_templates, kiosk_sessions TO facegate_gateway;
    GRANT SELECT, INSERT ON gallery_tombstones, devices TO facegate_gateway;
    GRANT SELECT ON kiosk_events TO facegate_gateway;
    GRANT SELECT, INSERT, UPDATE ON usage_counters TO facegate_gateway;
    GRANT SELECT, INSERT, UPDATE, DELETE ON attempt_counters, login_confirmations, one_time_challenges, idempotent_requests
        TO facegate_gateway;
    -- matcher-worker: reads the galleries, writes templates (enrollment) and its redelivery record.
    GRANT SELECT ON apps, users, gallery_tombstones TO facegate_matcher;
    GRANT SELECT, INSERT ON face_templates, processed_messages TO facegate_matcher;
    -- ctid-verifier: spends serials, keeps the registry.
    GRANT SELECT ON apps TO facegate_ctid;
    GRANT SELECT, UPDATE ON ctid_serials TO facegate_ctid;
    GRANT SELECT, INSERT, UPDATE ON ctid_registry TO facegate_ctid;
    GRANT SELECT, INSERT ON processed_messages TO facegate_ctid;
    -- kiosk-orchestrator: sessions and their events, new customers.
    GRANT SELECT ON apps, face_templates TO facegate_kiosk;
    GRANT SELECT, INSERT, DELETE ON users TO facegate_kiosk;
    GRANT SELECT, INSERT, UPDATE, DELETE ON kiosk_sessions TO facegate_kiosk;
    GRANT SELECT, INSERT ON kiosk_events TO facegate_kiosk;
    -- The requesters' reply partitions, and the audit trail: appended and read, never changed.
    GRANT SELECT, INSERT, UPDATE, DELETE ON reply_partition_leases TO facegate_gateway, facegate_ctid, facegate_kiosk;
    GRANT SELECT, INSERT ON transactions TO facegate_gateway, facegate_ctid, facegate_kiosk;
    GRANT SELECT, INSERT, UPDATE ON transaction_chain_heads TO facegate_gateway, facegate_ctid, facegate_kiosk;
    """

    static let secretRotationTime = """
    -- Access tokens issued before an app's latest secret rotation are refused.
    ALTER TABLE apps ADD COLUMN secret_rotated_at timestamptz;
    """

    /// Row-level security FORCEd on every table holding an app's data, so the owner is held too. A transaction
    /// names its app with `SET LOCAL facegate.app_id` (ServiceKit's `Tenant`) and sees and writes only that app's
    /// rows; with nothing set it sees nothing. `*` reads and deletes across apps (the gallery load, listings,
    /// retention) but never inserts or updates; the schema owner may also write under `*` (operator repairs);
    /// `facegate_auditor` reads the audit trail of every app. Integrity checks and cascades bypass the policies,
    /// as PostgreSQL runs them as the owner without FORCE.
    static let forcedRowLevelSecurity: String = {
        var sql = """
        DROP POLICY tenant_users ON users;
        DROP POLICY tenant_templates ON face_templates;
        DROP POLICY tenant_devices ON devices;
        DROP POLICY tenant_transactions ON transactions;

        """
        for table in tenantTablesAtStep13 { sql += forcedPolicies(table) }
        sql += """
        -- Kiosk events belong to their session: visible exactly when the session is.
        ALTER TABLE kiosk_events ENABLE ROW LEVEL SECURITY;
        ALTER TABLE kiosk_events FORCE ROW LEVEL SECURITY;
        CREATE POLICY own_session ON kiosk_events USING (EXISTS (SELECT 1 FROM kiosk_sessions s WHERE s.id = session_id));
        -- The explicit cross-app audit role.
        CREATE POLICY auditor_reads ON transactions FOR SELECT TO facegate_auditor USING (true);
        CREATE POLICY auditor_reads ON transaction_chain_heads FOR SELECT TO facegate_auditor USING (true);
        """
        return sql
    }()

    static func forcedPolicies(_ table: String) -> String {
        """
        ALTER TABLE \(table) ENABLE ROW LEVEL SECURITY;
        ALTER TABLE \(table) FORCE ROW LEVEL SECURITY;
        CREATE POLICY one_app ON \(table) USING (app_id::text = current_setting('facegate.app_id', true));
        CREATE POLICY every_app_read ON \(table) FOR SELECT USING (current_setting('facegate.app_id', true) = '*');
        CREATE POLICY every_app_sweep ON \(table) FOR DELETE USING (current_setting('facegate.app_id', true) = '*');
        CREATE POLICY owner_every_app ON \(table) TO CURRENT_USER USING (current_setting('facegate.app_id', true) = '*');

        """
    }

    /// Apps that choose to (`keepEnrollmentPhotos`) keep each enrollment photo whose subject consented, sealed and
    /// bound to its template, so that a move to another face model can re-embed everyone at once. A photo is erased
    /// with its template (and so with its user and app). Only the matcher reads the sealed bytes: the gateway sees
    /// which templates have one and when consent was given, never the photo.
    static let keptEnrollmentPhotos = """
    ALTER TABLE apps ADD COLUMN keep_enrollment_photos boolean NOT NULL DEFAULT false;
    CREATE TABLE enrollment_photos (
        template_id uuid PRIMARY KEY REFERENCES face_templates(id) ON DELETE CASCADE,
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        photo_sealed bytea NOT NULL,
        consent_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX enrollment_photos_app ON enrollment_photos (app_id, created_at);
    CREATE INDEX enrollment_photos_user ON enrollment_photos (user_id);
    GRANT SELECT, INSERT ON enrollment_photos TO facegate_matcher;
    GRANT SELECT (template_id, app_id, user_id, consent_at, created_at) ON enrollment_photos TO facegate_gateway;
    \(forcedPolicies("enrollment_photos"))
    """

    /// A kiosk is a registered device: an operator records the RFC 7638 thumbprint of its P-256 DPoP key (`jkt`), and only
    /// a live kiosk's key may call the kiosk routes. A revoked row stays (its sessions and audit rows still name it), and a
    /// key is live in at most one kiosk of an app. Each kiosk session names the kiosk that opened it. A replayed liveness
    /// burst is recognised within its app only: one app's frames say nothing about another's.
    static let registeredKiosks = """
    CREATE TABLE kiosks (
        id uuid PRIMARY KEY,
        app_id uuid NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        jkt text NOT NULL CHECK (length(jkt) = 43),
        allowed_addresses text[],
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
    );
    CREATE UNIQUE INDEX kiosks_live_key ON kiosks (app_id, jkt) WHERE revoked_at IS NULL;
    GRANT SELECT, INSERT, UPDATE ON kiosks TO facegate_gateway;
    \(forcedPolicies("kiosks"))
    ALTER TABLE kiosk_sessions ADD COLUMN kiosk_id uuid;
    CREATE INDEX kiosk_sessions_open_by_kiosk ON kiosk_sessions (kiosk_id) WHERE kiosk_id IS NOT NULL
        AND state NOT IN ('completed', 'failed', 'cancelled', 'expired');
    ALTER TABLE used_liveness_frames DROP CONSTRAINT used_liveness_frames_pkey;
    ALTER TABLE used_liveness_frames ADD PRIMARY KEY (app_id, digest);
    """

    /// An operator may delete an app: the row goes, and with it, by cascade, every row that references it. Two tables name
    /// an app without a foreign key (spent token ids, gallery tombstones) and are emptied of it in the same transaction.
    static let appDeletion = """
    GRANT DELETE ON apps, gallery_tombstones TO facegate_gateway;
    """

    /// Tombstones name their app by a foreign key, so deleting an app takes them by cascade as it takes every other row of
    /// the app's: the app's owner (`AppRecords`) writes no table of the identities' (`IdentityRecords`). Tombstones of an
    /// app already gone are dropped first (as the owner, across apps).
    static let tombstonesFollowTheirApp = """
    SELECT set_config('facegate.app_id', '*', true);
    DELETE FROM gallery_tombstones t WHERE NOT EXISTS (SELECT 1 FROM apps a WHERE a.id = t.app_id);
    ALTER TABLE gallery_tombstones ADD CONSTRAINT gallery_tombstones_app_id_fkey FOREIGN KEY (app_id) REFERENCES apps(id) ON DELETE CASCADE;
    REVOKE DELETE ON gallery_tombstones FROM facegate_gateway;
    """

    /// A matcher's reconciliation reads the templates and tombstones changed after its sequence number or in the last
    /// five minutes (sequence numbers can commit out of order): with both columns indexed that is two index scans, not a
    /// scan of the whole gallery every 30 s per matcher.
    static let recentGalleryChanges = """
    CREATE INDEX face_templates_created ON face_templates (created_at);
    CREATE INDEX gallery_tombstones_deleted ON gallery_tombstones (deleted_at);
    """

    /// Each template's shard hash (`templateShardHash`, FNV-1a 64 over the id's bytes, as its signed bit pattern), so that
    /// a sharded matcher's load reads only its own slice instead of the whole gallery. The writers set it; the templates
    /// stored before are filled here by a function of the same rule (numeric arithmetic: it runs once, not per load). A
    /// row without one (a writer older than this step) is read by every shard, which keeps what hashes to it.
    static let templateShardHash = """
    ALTER TABLE face_templates ADD COLUMN shard_hash bigint;
    CREATE FUNCTION template_shard_hash(id uuid) RETURNS bigint LANGUAGE plpgsql IMMUTABLE STRICT AS $$
    DECLARE
        bytes bytea := uuid_send(id);
        hash numeric := 14695981039346656037;
        low int;
    BEGIN
        FOR i IN 0..15 LOOP
            low := mod(hash, 256)::int;
            hash := mod((hash - low + (low # get_byte(bytes, i))) * 1099511628211, 18446744073709551616);
        END LOOP;
        RETURN (CASE WHEN hash >= 9223372036854775808 THEN hash - 18446744073709551616 ELSE hash END)::bigint;
    END $$;
    SELECT set_config('facegate.app_id', '*', true);
    UPDATE face_templates SET shard_hash = template_shard_hash(id);
    """
}
