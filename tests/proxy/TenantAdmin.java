import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * One tenant's configs, ACLs and client quotas through {@code kwire proxy --tenant
 * principal:...} with the Java AdminClient, for tests/proxy_tls.rs; or, as {@code broker},
 * what the broker holds, asked past the proxy. Phases:
 * <ul>
 *   <li>{@code grant}: creates topic {@code orders-TAG}, sets and reads its retention.ms (a
 *   value of the user's own), reads the other tenant's topic by its broker-side name, grants
 *   the user READ on the topic (LITERAL) and on groups {@code group-TAG} (PREFIXED), sets the
 *   user's consumer_byte_rate and tries the other user's and a client id's, then lists the
 *   ACLs and quotas it sees;</li>
 *   <li>{@code revoke}: deletes every ACL it can ({@code AclBindingFilter.ANY}) and its
 *   quota, then lists both again;</li>
 *   <li>{@code broker}: the broker's ACLs, quotas and topics with TAG in their names.</li>
 * </ul>
 * Prints one JSON object. Run from source: {@code java -cp 'target/java-client/lib/*'
 * tests/proxy/TenantAdmin.java BOOTSTRAP USER|- OTHER_USER TAG PHASE}, with the SASL PLAIN
 * password in KWIRE_SASL_PASSWORD (no SASL for {@code broker}).
 */
public final class TenantAdmin {
    private TenantAdmin() {}

    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static String json(Collection<String> items) {
        List<String> out = new ArrayList<>();
        for (String s : items) {
            out.add(quote(s));
        }
        return "[" + String.join(",", out) + "]";
    }

    /** The error a future ends with: its class's simple name, or "ok". */
    private static String outcome(KafkaFuture<?> future) throws InterruptedException {
        try {
            future.get();
            return "ok";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        }
    }

    private static String binding(AclBinding b) {
        return b.pattern().resourceType() + ":" + b.pattern().patternType() + ":" + b.pattern().name() + ":"
                + b.entry().principal() + ":" + b.entry().operation() + ":" + b.entry().permissionType();
    }

    private static TreeSet<String> acls(Admin admin) throws Exception {
        TreeSet<String> out = new TreeSet<>();
        for (AclBinding b : admin.describeAcls(AclBindingFilter.ANY).values().get()) {
            out.add(binding(b));
        }
        return out;
    }

    private static TreeSet<String> quotas(Admin admin) throws Exception {
        TreeSet<String> out = new TreeSet<>();
        Map<ClientQuotaEntity, Map<String, Double>> all =
                admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get();
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : all.entrySet()) {
            out.add(new TreeMap<>(e.getKey().entries()) + "=" + new TreeMap<>(e.getValue()));
        }
        return out;
    }

    private static ClientQuotaAlteration rate(String type, String name, Double value) {
        return new ClientQuotaAlteration(
                new ClientQuotaEntity(Map.of(type, name)),
                List.of(new ClientQuotaAlteration.Op("consumer_byte_rate", value)));
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String user = args[1];
        String other = args[2];
        String tag = args[3];
        String phase = args[4];
        String topic = "orders-" + tag;
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        if (!phase.equals("broker")) {
            props.put("security.protocol", "SASL_PLAINTEXT");
            props.put("sasl.mechanism", "PLAIN");
            props.put(
                    "sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + user
                            + "\" password=\"" + System.getenv("KWIRE_SASL_PASSWORD") + "\";");
        }
        StringBuilder out = new StringBuilder("{");
        try (Admin admin = Admin.create(props)) {
            if (phase.equals("grant")) {
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
                String retention = user.equals("alice") ? "111000" : "222000";
                ConfigResource mine = new ConfigResource(ConfigResource.Type.TOPIC, topic);
                AlterConfigOp set = new AlterConfigOp(new ConfigEntry("retention.ms", retention), AlterConfigOp.OpType.SET);
                admin.incrementalAlterConfigs(Map.of(mine, List.of(set))).all().get();
                // The broker learns the change from the controller's metadata a moment later.
                String read = "";
                for (int i = 0; i < 100 && !read.equals(retention); i++) {
                    if (i > 0) {
                        Thread.sleep(100);
                    }
                    read = admin.describeConfigs(List.of(mine)).all().get().get(mine).get("retention.ms").value();
                }
                String otherPrefix = user.equals("alice") ? "tenant-b." : "tenant-a.";
                ConfigResource theirs = new ConfigResource(ConfigResource.Type.TOPIC, otherPrefix + topic);
                String theirsRead = outcome(admin.describeConfigs(List.of(theirs)).all());
                String principal = "User:" + user;
                List<AclBinding> grants = List.of(
                        new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                                new AccessControlEntry(principal, "*", AclOperation.READ, AclPermissionType.ALLOW)),
                        new AclBinding(new ResourcePattern(ResourceType.GROUP, "group-" + tag, PatternType.PREFIXED),
                                new AccessControlEntry(principal, "*", AclOperation.READ, AclPermissionType.ALLOW)));
                admin.createAcls(grants).all().get();
                String own = outcome(admin.alterClientQuotas(List.of(rate(ClientQuotaEntity.USER, user, 1.0e9))).all());
                String others = outcome(admin.alterClientQuotas(List.of(rate(ClientQuotaEntity.USER, other, 5.0))).all());
                String clientId = outcome(admin.alterClientQuotas(List.of(rate(ClientQuotaEntity.CLIENT_ID, "app-" + tag, 5.0))).all());
                out.append("\"retention\":").append(quote(read))
                        .append(",\"theirs\":").append(quote(theirsRead))
                        .append(",\"quota_own\":").append(quote(own))
                        .append(",\"quota_other_user\":").append(quote(others))
                        .append(",\"quota_client_id\":").append(quote(clientId))
                        .append(",\"acls\":").append(json(acls(admin)))
                        .append(",\"quotas\":").append(json(quotas(admin)));
            } else if (phase.equals("revoke")) {
                TreeSet<String> deleted = new TreeSet<>();
                for (AclBinding b : admin.deleteAcls(List.of(AclBindingFilter.ANY)).all().get()) {
                    deleted.add(binding(b));
                }
                admin.alterClientQuotas(List.of(rate(ClientQuotaEntity.USER, user, null))).all().get();
                // The controller has the removal once the call returns; the broker that answers
                // DescribeClientQuotas applies it from the metadata log a moment later.
                TreeSet<String> left = quotas(admin);
                for (int i = 0; i < 50 && !left.isEmpty(); i++) {
                    Thread.sleep(200);
                    left = quotas(admin);
                }
                out.append("\"deleted\":").append(json(deleted))
                        .append(",\"acls\":").append(json(acls(admin)))
                        .append(",\"quotas\":").append(json(left));
            } else {
                TreeSet<String> topics = new TreeSet<>();
                for (String t : admin.listTopics().names().get()) {
                    if (t.contains(tag)) {
                        topics.add(t);
                    }
                }
                out.append("\"topics\":").append(json(topics))
                        .append(",\"acls\":").append(json(acls(admin)))
                        .append(",\"quotas\":").append(json(quotas(admin)));
            }
        }
        System.out.println(out.append("}"));
    }
}
