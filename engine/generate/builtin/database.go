package builtin

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/model"
)

// engine is what tells the catalog's mysql and postgres modules apart; the
// rest of them is one module.
type engine struct {
	// name is the module's name, the suffix of the default database name
	// and of the credentials Secret, and the image.
	name string
	// awsEngine and alicloudEngine are the engine as each cloud spells it.
	awsEngine, alicloudEngine string
	port                      int
	defaultUser               string
	// dataDir is where the image keeps its data.
	dataDir string
	// localEnv is the local container's environment; secret is the local
	// Secret holding the password (and, for postgres, user and database).
	localEnv func(username, secret string) []any
	// localSecret is the local Secret's data.
	localSecret func(username, password, database string) map[string]any
}

func mysqlEngine() engine {
	return engine{
		name:           "mysql",
		awsEngine:      "mysql",
		alicloudEngine: "MySQL",
		port:           3306,
		defaultUser:    "root",
		dataDir:        "/var/lib/mysql",
		localEnv: func(username, secret string) []any {
			if username == "root" {
				return []any{secretEnv("MYSQL_ROOT_PASSWORD", secret, "password")}
			}
			// The catalog sets only MYSQL_USER and MYSQL_PASSWORD here,
			// and the image then refuses to start for want of a root
			// password; a random one keeps root out of reach and the
			// database up.
			return []any{
				map[string]any{"name": "MYSQL_USER", "value": username},
				secretEnv("MYSQL_PASSWORD", secret, "password"),
				map[string]any{"name": "MYSQL_RANDOM_ROOT_PASSWORD", "value": "yes"},
			}
		},
		localSecret: func(_, password, _ string) map[string]any {
			return map[string]any{"password": password}
		},
	}
}

func postgresEngine() engine {
	return engine{
		name:           "postgres",
		awsEngine:      "postgres",
		alicloudEngine: "PostgreSQL",
		port:           5432,
		// An Alicloud RDS account name must not be a reserved word such as
		// root or postgres, so the catalog picked its own.
		defaultUser: "kusion_default",
		dataDir:     "/var/lib/postgresql/data",
		localEnv: func(_, secret string) []any {
			return []any{
				secretEnv("POSTGRES_USER", secret, "username"),
				secretEnv("POSTGRES_PASSWORD", secret, "password"),
				secretEnv("POSTGRES_DB", secret, "database"),
			}
		},
		localSecret: func(username, password, database string) map[string]any {
			return map[string]any{"password": password, "username": username, "database": database}
		},
	}
}

func secretEnv(name, secret, key string) map[string]any {
	return map[string]any{
		"name":      name,
		"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": secret, "key": key}},
	}
}

// databaseModule is the catalog's mysql or postgres module: a database in
// the cluster (type local) or at a cloud (type cloud), and a Secret with its
// address and credentials that the workload reads through environment
// variables.
type databaseModule struct {
	engine engine
}

type databaseConfig struct {
	Type    string `json:"_type"`
	Kind    string `json:"type"`
	Version string `json:"version"`
}

type databasePlatform struct {
	Cloud          string   `json:"cloud"`
	Username       string   `json:"username"`
	Category       string   `json:"category"`
	SecurityIPs    []string `json:"securityIPs"`
	PrivateRouting *bool    `json:"privateRouting"`
	Size           *int     `json:"size"`
	InstanceType   string   `json:"instanceType"`
	SubnetID       string   `json:"subnetID"`
	DatabaseName   string   `json:"databaseName"`
	// Region is ours: the catalog reads AWS_REGION or ALICLOUD_REGION from
	// the environment of whoever runs Kusion.
	Region            string `json:"region"`
	ImportedResources any    `json:"importedResources"`
}

// database is a database's configuration with the defaults filled in.
type database struct {
	local          bool
	cloud          string
	version        string
	name           string
	username       string
	category       string
	securityIPs    []string
	privateRouting bool
	size           int
	instanceType   string
	subnetID       string
	region         string
}

const (
	cloudAWS      = "aws"
	cloudAlicloud = "alicloud"
)

func (m databaseModule) Generate(_ context.Context, req module.Request) (*module.Response, error) {
	db, err := m.complete(req)
	if err != nil {
		return nil, err
	}
	e := m.engine
	var resources model.Resources
	var host, password string
	switch {
	case db.local:
		resources, host, password = e.local(req, db)
	case db.cloud == cloudAWS:
		resources, host, password = e.aws(db)
	default:
		resources, host, password = e.alicloud(db)
	}
	secret := db.name + "-" + e.name
	resources = append(resources, kubeResource("v1", "Secret", objectMeta{name: secret, namespace: req.Project},
		map[string]any{"stringData": map[string]any{
			"hostAddress": host,
			"username":    db.username,
			"password":    password,
		}}))
	return &module.Response{Resources: resources, Patcher: credentialsPatcher(db.name, secret)}, nil
}

// complete decodes and checks the inputs and fills in the defaults.
func (m databaseModule) complete(req module.Request) (database, error) {
	e := m.engine
	var dev databaseConfig
	var plat databasePlatform
	var p problems
	p.addErr(module.Decode(module.DevConfig, req.DevConfig, &dev))
	p.addErr(module.Decode(module.PlatformConfig, req.PlatformConfig, &plat))
	if err := p.err(); err != nil {
		return database{}, err
	}

	db := database{
		version:        dev.Version,
		name:           plat.DatabaseName,
		username:       plat.Username,
		category:       plat.Category,
		securityIPs:    plat.SecurityIPs,
		privateRouting: true,
		size:           10,
		instanceType:   plat.InstanceType,
		subnetID:       plat.SubnetID,
		region:         plat.Region,
	}
	if db.name == "" {
		db.name = uniqueName(req) + "-" + e.name
	}
	if db.username == "" {
		db.username = e.defaultUser
	}
	if db.category == "" {
		db.category = "Basic"
	}
	if db.securityIPs == nil {
		db.securityIPs = []string{"0.0.0.0/0"}
	}
	if plat.PrivateRouting != nil {
		db.privateRouting = *plat.PrivateRouting
	}
	if plat.Size != nil {
		db.size = *plat.Size
		if db.size < 1 {
			p.add(module.PlatformConfig, "size", "must be a positive number of GiB")
		}
	}
	if dev.Version == "" {
		p.add(module.DevConfig, "version", "required")
	}
	for i, ip := range db.securityIPs {
		if net.ParseIP(ip) == nil {
			if _, _, err := net.ParseCIDR(ip); err != nil {
				p.add(module.PlatformConfig, indexPath("securityIPs", i), "want an IP address or a CIDR block such as 10.0.0.0/8")
			}
		}
	}

	switch strings.ToLower(dev.Kind) {
	case "local":
		db.local = true
	case "cloud":
		db.cloud = strings.ToLower(plat.Cloud)
		switch db.cloud {
		case cloudAWS, cloudAlicloud:
			var ctxErr error
			if db.region == "" {
				db.region, ctxErr = contextRegion(req, db.cloud)
				p.addErr(ctxErr)
			}
			if db.region == "" && ctxErr == nil {
				p.add(module.PlatformConfig, "region", "required for a cloud database: set it here or %s in the workspace context", regionKey(db.cloud))
			}
		case "":
			p.add(module.PlatformConfig, "cloud", "required for a cloud database: want aws or alicloud")
		default:
			p.add(module.PlatformConfig, "cloud", "unsupported cloud %s, want aws or alicloud", plat.Cloud)
		}
		if db.instanceType == "" {
			p.add(module.PlatformConfig, "instanceType", "required for a cloud database")
		}
	case "":
		p.add(module.DevConfig, "type", "required: want local or cloud")
	default:
		p.add(module.DevConfig, "type", "unsupported type %s, want local or cloud", dev.Kind)
	}
	if err := p.err(); err != nil {
		return database{}, err
	}
	return db, nil
}

func regionKey(cloud string) string {
	if cloud == cloudAlicloud {
		return "ALICLOUD_REGION"
	}
	return "AWS_REGION"
}

// contextRegion reads the cloud's region from the workspace context, under
// the name of the environment variable the catalog reads.
func contextRegion(req module.Request, cloud string) (string, error) {
	ctx, err := topLevel(module.Context, req.Context)
	if err != nil {
		return "", err
	}
	key := regionKey(cloud)
	var region string
	if err := decodeNode(module.Context, ctx[key], key, &region); err != nil {
		return "", err
	}
	return region, nil
}

// credentialsPatcher hands the workload the database's address and
// credentials; the names carry the database's so that two databases of an
// app do not clash.
func credentialsPatcher(dbName, secret string) *module.Patcher {
	suffix := strings.ToUpper(strings.ReplaceAll(dbName, "-", "_"))
	env := func(prefix, key string) corev1.EnvVar {
		return corev1.EnvVar{
			Name: prefix + "_" + suffix,
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: secret},
				Key:                  key,
			}},
		}
	}
	return &module.Patcher{Environments: []corev1.EnvVar{
		env("KUSION_DB_HOST", "hostAddress"),
		env("KUSION_DB_USERNAME", "username"),
		env("KUSION_DB_PASSWORD", "password"),
	}}
}

// local is the database as a Deployment in the app's namespace. The
// password is derived from the names, as in Kusion, so that generating
// again gives the same Secret.
func (e engine) local(req module.Request, db database) (resources model.Resources, host, password string) {
	sum := md5.Sum([]byte(req.Project + req.Stack + req.App + db.name))
	password = hex.EncodeToString(sum[:])[:16]

	secret := db.name + "-db-local-secret"
	deployment := db.name + "-db-local-deployment"
	pvc := db.name + "-db-local-pvc"
	service := db.name + "-db-local-service"
	// The database's name is also its container's, its volume's and its
	// label's; those must be DNS labels, the port name an IANA service name.
	label := strings.TrimRight(truncate(db.name, maxDNSLabel), "-_.")
	portName := strings.TrimRight(truncate(db.name, 15), "-")
	selector := map[string]string{"accessory": label}

	resources = append(resources,
		kubeResource("v1", "Secret", objectMeta{name: secret, namespace: req.Project},
			map[string]any{"stringData": e.localSecret(db.username, password, db.name)}),
		kubeResource("apps/v1", "Deployment", objectMeta{name: deployment, namespace: req.Project},
			map[string]any{"spec": map[string]any{
				"selector": map[string]any{"matchLabels": anyMap(selector)},
				"template": map[string]any{
					"metadata": map[string]any{"labels": anyMap(selector)},
					"spec": map[string]any{
						"containers": []any{map[string]any{
							"name":         label,
							"image":        e.name + ":" + db.version,
							"env":          e.localEnv(db.username, secret),
							"ports":        []any{map[string]any{"name": portName, "containerPort": e.port}},
							"volumeMounts": []any{map[string]any{"name": label, "mountPath": e.dataDir}},
						}},
						"volumes": []any{map[string]any{
							"name":                  label,
							"persistentVolumeClaim": map[string]any{"claimName": pvc},
						}},
					},
				},
			}}),
		kubeResource("v1", "PersistentVolumeClaim", objectMeta{name: pvc, namespace: req.Project, labels: selector},
			map[string]any{"spec": map[string]any{
				"accessModes": []any{"ReadWriteOnce"},
				"resources": map[string]any{
					"requests": map[string]any{"storage": strconv.Itoa(db.size) + "Gi"},
				},
			}}),
		kubeResource("v1", "Service", objectMeta{name: service, namespace: req.Project, labels: selector},
			map[string]any{"spec": map[string]any{
				"clusterIP": "None",
				"ports":     []any{map[string]any{"port": e.port}},
				"selector":  anyMap(selector),
			}}),
	)
	return resources, service, password
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// The providers and versions the catalog pins.
func randomProvider() tfProvider {
	return tfProvider{namespace: "hashicorp", name: "random", version: "3.6.0"}
}

func awsProvider() tfProvider {
	return tfProvider{namespace: "hashicorp", name: "aws", version: "5.0.1"}
}

func alicloudProvider() tfProvider {
	return tfProvider{namespace: "aliyun", name: "alicloud", version: "1.209.1"}
}

// randomPassword is the cloud database's password, made by Terraform so
// that it is never in the spec.
func (e engine) randomPassword(db database) model.Resource {
	return randomProvider().resource("random_password", db.name+"-"+e.name, "", map[string]any{
		"length":           16,
		"special":          true,
		"override_special": "_",
	}, nil)
}

// publiclyAccessible says whether any allowed address is outside the
// private ranges, as the catalog decides it (0.0.0.0/0 is public).
func publiclyAccessible(ips []string) bool {
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			var err error
			if ip, _, err = net.ParseCIDR(s); err != nil {
				continue
			}
		}
		if !ip.IsPrivate() {
			return true
		}
	}
	return false
}

func (e engine) aws(db database) (resources model.Resources, host, password string) {
	random := e.randomPassword(db)
	// Terraform wants every attribute of an ingress or egress rule, null or
	// not, when the rules are given as a list.
	rule := func(cidrs []any, protocol string, from, to int) map[string]any {
		return map[string]any{
			"cidr_blocks":      cidrs,
			"description":      "",
			"from_port":        from,
			"ipv6_cidr_blocks": nil,
			"prefix_list_ids":  nil,
			"protocol":         protocol,
			"security_groups":  nil,
			"self":             false,
			"to_port":          to,
		}
	}
	sg := awsProvider().resource("aws_security_group", db.name+"-"+e.name, db.region, map[string]any{
		"egress":  []any{rule([]any{"0.0.0.0/0"}, "-1", 0, 0)},
		"ingress": []any{rule(anyList(db.securityIPs), "tcp", e.port, e.port)},
	}, nil)
	attrs := map[string]any{
		"allocated_storage":      db.size,
		"engine":                 e.awsEngine,
		"engine_version":         db.version,
		"identifier":             db.name,
		"instance_class":         db.instanceType,
		"password":               kusionPath(random.ID, "result"),
		"publicly_accessible":    publiclyAccessible(db.securityIPs),
		"skip_final_snapshot":    true,
		"username":               db.username,
		"vpc_security_group_ids": []any{kusionPath(sg.ID, "id")},
	}
	if db.subnetID != "" {
		attrs["db_subnet_group_name"] = db.subnetID
	}
	instance := awsProvider().resource("aws_db_instance", db.name, db.region, attrs, nil)
	return model.Resources{random, sg, instance}, kusionPath(instance.ID, "address"), kusionPath(random.ID, "result")
}

func (e engine) alicloud(db database) (resources model.Resources, host, password string) {
	random := e.randomPassword(db)
	attrs := map[string]any{
		"category":         db.category,
		"engine":           e.alicloudEngine,
		"engine_version":   db.version,
		"instance_storage": db.size,
		"instance_type":    db.instanceType,
		"security_ips":     anyList(db.securityIPs),
		"vswitch_id":       db.subnetID,
		"instance_name":    db.name,
	}
	if strings.Contains(db.category, "serverless") {
		attrs["db_instance_storage_type"] = "cloud_essd"
		attrs["instance_charge_type"] = "Serverless"
		attrs["serverless_config"] = []any{map[string]any{
			"auto_pause":   false,
			"switch_force": false,
			"max_capacity": 8,
			"min_capacity": 1,
		}}
	}
	instance := alicloudProvider().resource("alicloud_db_instance", db.name, db.region, attrs, nil)
	account := alicloudProvider().resource("alicloud_rds_account", db.name, db.region, map[string]any{
		"account_name":     db.username,
		"account_password": kusionPath(random.ID, "result"),
		"account_type":     "Super",
		"db_instance_id":   kusionPath(instance.ID, "id"),
	}, nil)
	resources = model.Resources{random, instance, account}
	host = kusionPath(instance.ID, "connection_string")
	// The public endpoint exists only when some allowed address is public;
	// the catalog would otherwise point the app at "$kusion_path..", an id
	// that is not there, so without it the app keeps the private one.
	if publiclyAccessible(db.securityIPs) {
		conn := alicloudProvider().resource("alicloud_db_connection", db.name, db.region, map[string]any{
			"instance_id": kusionPath(instance.ID, "id"),
			"port":        e.port,
		}, []string{account.ID})
		resources = append(resources, conn)
		if !db.privateRouting {
			host = kusionPath(conn.ID, "connection_string")
		}
	}
	return resources, host, kusionPath(random.ID, "result")
}
