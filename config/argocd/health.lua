-- Argo CD health check for kubevirt.io/KubeVirt (resource.customizations.health.kubevirt.io_KubeVirt).
-- It reads the standard conditions virt-operator writes (Ready, Reconciling, Stalled), and upstream's
-- (Available, Progressing, Degraded) on a CR no virt-operator of this kind has written yet.
local hs = { status = "Progressing", message = "Waiting for the operator to report status" }
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local conditions = {}
for _, c in ipairs(obj.status.conditions) do
  conditions[c.type] = c
end
local function is(type, status)
  return conditions[type] ~= nil and conditions[type].status == status
end
local function say(c)
  if c == nil then return "" end
  local reason, message = c.reason or "", c.message or ""
  if reason ~= "" and message ~= "" then return reason .. ": " .. message end
  return reason .. message
end
local target, observed = obj.status.targetKubeVirtVersion or "", obj.status.observedKubeVirtVersion or ""
if conditions["Ready"] ~= nil then
  if is("Stalled", "True") then
    hs.status, hs.message = "Degraded", say(conditions["Stalled"])
  elseif is("Ready", "True") and obj.status.phase == "Deployed" and obj.status.observedDeploymentID == obj.status.targetDeploymentID then
    hs.status, hs.message = "Healthy", "KubeVirt " .. observed .. " is deployed"
  else
    hs.message = say(conditions["Reconciling"])
  end
  return hs
end
if is("Progressing", "True") then
  hs.message = say(conditions["Progressing"])
elseif is("Degraded", "True") then
  hs.status, hs.message = "Degraded", say(conditions["Degraded"])
elseif is("Available", "True") and obj.status.phase == "Deployed" then
  hs.status, hs.message = "Healthy", "KubeVirt " .. observed .. " is deployed"
end
if target ~= "" and observed ~= target and hs.status == "Healthy" then
  hs.status, hs.message = "Progressing", "Updating from " .. observed .. " to " .. target
end
return hs
